import CoreFoundation
import Foundation

/// Timers, observers and descriptor (version-1) sources: the CF objects behind `LongThreadTimer`,
/// `RunLoopObserver` and `DescriptorSource`. Each wraps one CF object; its callout reaches a target
/// object that CF retains through the context and releases when the CF object is freed.
extension RunLoopEngine {
    /// The CF name of a Foundation mode: `.common` is CF's common-modes marker.
    static func cfMode(_ mode: RunLoop.Mode) -> CFString {
        switch mode {
        case .default: kCFRunLoopDefaultMode
        case .common: kCFRunLoopCommonModes
        default: cfString(mode.rawValue)
        }
    }

    /// Adds `item` to each of `modes`. Any thread, only while the loop lives (the caller holds the
    /// thread's lock and has checked it accepts work).
    func add(_ item: EngineItem, modes: [RunLoop.Mode]) {
        assertLockHeld()
        for mode in modes {
            let name = Self.cfMode(mode)
            switch item.object {
            case .timer(let timer): CFRunLoopAddTimer(runLoop, timer, name)
            case .observer(let observer, _): CFRunLoopAddObserver(runLoop, observer, name)
            case .source(let source): CFRunLoopAddSource(runLoop, source, name)
            }
        }
    }

    /// Adds `mode` to the loop's common modes: CF copies every common-mode item into it.
    func addCommonMode(_ mode: RunLoop.Mode) {
        assertLockHeld()
        CFRunLoopAddCommonMode(runLoop, Self.cfMode(mode))
    }
}

/// One CF timer, observer or version-1 source. `invalidate()` is thread-safe and removes it from
/// every mode; the callout target is released when CF frees the object.
final class EngineItem: @unchecked Sendable {
    enum Object {
        case timer(CFRunLoopTimer)
        /// With the table its callout finds its target in (`invalidate()` removes the target).
        case observer(CFRunLoopObserver, ObserverTargets)
        case source(CFRunLoopSource)
    }

    let object: Object

    private init(_ object: Object) { self.object = object }

    func invalidate() {
        switch object {
        case .timer(let timer): CFRunLoopTimerInvalidate(timer)
        case .observer(let observer, let targets):
            CFRunLoopObserverInvalidate(observer)
            targets.remove(observer)
        case .source(let source): CFRunLoopSourceInvalidate(source)
        }
    }

    // MARK: - Timers

    /// A one-shot CF timer firing after `delay`: the deadline of a nested run (`runNested`). The
    /// thread's `LongThreadTimer`s share another, one per thread (`RunLoopEngine.armTimers`).
    ///
    /// The context has a `retain` callback: CF then retains the target around each callout, so an
    /// invalidation during the callout cannot free it (a stop invalidating a timer from another
    /// thread while it calls out would otherwise free its target under it: a use-after-free).
    /// CF retains the info once at creation and releases it on invalidation.
    static func timer(after delay: Duration, target: @escaping () -> Void) -> EngineItem {
        let callout = Callout(target)
        var context = CFRunLoopTimerContext()
        context.info = Unmanaged.passUnretained(callout).toOpaque()
        context.retain = { info in
            _ = Unmanaged<Callout>.fromOpaque(info!).retain()
            return info
        }
        context.release = { Unmanaged<Callout>.fromOpaque($0!).release() }
        let fireDate = CFAbsoluteTimeGetCurrent() + delay.seconds
        let timer = CFRunLoopTimerCreate(nil, fireDate, 0, 0, 0, { _, info in
            guard let info else { return } // invalidated meanwhile
            Unmanaged<Callout>.fromOpaque(info).takeUnretainedValue().run()
        }, &context)!
        return EngineItem(.timer(timer))
    }

    // MARK: - Observers

    /// Unlike a timer's, an observer's info is not retained by CF around its callout, and
    /// `CFRunLoopObserverInvalidate` on another thread releases it (and sets it to NULL) while a
    /// callout may be starting: a use-after-free `longthread-stress` found under AddressSanitizer.
    /// So the info is `targets`, a table that outlives every callout (the thread's, released when
    /// it has exited), and the callout finds its target there by the observer calling out, under
    /// the table's lock: once `invalidate()` removed it, no callout can reach it, and one already
    /// running holds its own reference.
    static func observer(
        activities: UInt, order: Int, targets: ObserverTargets, target: @escaping (UInt) -> Void
    ) -> EngineItem {
        var context = CFRunLoopObserverContext()
        context.info = Unmanaged.passUnretained(targets).toOpaque()
        context.retain = { info in
            _ = Unmanaged<ObserverTargets>.fromOpaque(info!).retain()
            return info
        }
        context.release = { Unmanaged<ObserverTargets>.fromOpaque($0!).release() }
        let observer = CFRunLoopObserverCreate(nil, CFOptionFlags(activities), true, order, { observer, activity, info in
            guard let observer, let info else { return } // invalidated meanwhile
            Unmanaged<ObserverTargets>.fromOpaque(info).takeUnretainedValue()
                .target(of: observer)?(UInt(activity.rawValue))
        }, &context)!
        targets.insert(target, for: observer)
        return EngineItem(.observer(observer, targets))
    }

    // MARK: - Descriptor sources

    /// A version-1 source whose port is `port` (an epoll or eventfd descriptor the caller owns and
    /// closes in `onRelease`, once CF has removed the port from every mode's epoll set).
    static func source(port: Int32, target: @escaping () -> Void, onRelease: @escaping () -> Void) -> EngineItem {
        var context = CFRunLoopSourceContext1()
        context.version = 1
        context.info = Unmanaged.passRetained(PortCallout(port: port, run: target, onRelease: onRelease)).toOpaque()
        context.release = { Unmanaged<PortCallout>.fromOpaque($0!).release() }
        context.getPort = { Unmanaged<PortCallout>.fromOpaque($0!).takeUnretainedValue().port }
        context.perform = { Unmanaged<PortCallout>.fromOpaque($0!).takeUnretainedValue().run() }
        let source = withUnsafeMutablePointer(to: &context) {
            $0.withMemoryRebound(to: CFRunLoopSourceContext.self, capacity: 1) { CFRunLoopSourceCreate(nil, 0, $0)! }
        }
        return EngineItem(.source(source))
    }

    private final class Callout {
        let run: () -> Void
        init(_ run: @escaping () -> Void) { self.run = run }
    }

    private final class PortCallout {
        let port: Int32
        let run: () -> Void
        let onRelease: () -> Void
        init(port: Int32, run: @escaping () -> Void, onRelease: @escaping () -> Void) {
            self.port = port
            self.run = run
            self.onRelease = onRelease
        }
        deinit { onRelease() }
    }
}

extension RunLoopEngine {
    /// Loop thread only: runs the loop nested in `mode` until `deadline`, until `shouldReturn` says
    /// so (asked after each handled source), or until a stop ends the run.
    /// Returns false when the deadline passed or the run was stopped.
    func runNested(modeNamed mode: CFString, deadline: Duration, shouldReturn: () -> Bool, stopped: () -> Bool) -> Bool {
        // The deadline is a CF timer in that mode, not a finite run timeout: every finite timeout
        // arms a libdispatch timer on an overcommit queue (up to ~256 threads in tight loops).
        var expired = false
        let flag = UnsafeMutablePointer<Bool>.allocate(capacity: 1)
        flag.initialize(to: false)
        defer { flag.deallocate() }
        let runLoop = self.runLoop
        let timer = EngineItem.timer(after: deadline) {
            flag.pointee = true
            CFRunLoopStop(runLoop)
        }
        if case .timer(let cfTimer) = timer.object { CFRunLoopAddTimer(runLoop, cfTimer, mode) }
        defer { timer.invalidate() }
        while true {
            if shouldReturn() { return true }
            expired = flag.pointee
            if expired || stopped() { return false }
            _ = CFRunLoopRunInMode(mode, Self.forever, true)
        }
    }
}

extension Duration {
    /// Seconds as a `Double`, for CF's time intervals.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

/// The callout targets of a thread's observers, keyed by their CF observer. Any thread.
final class ObserverTargets: @unchecked Sendable {
    private let targets = Locked<[UnsafeMutableRawPointer: (UInt) -> Void]>([:])

    fileprivate func insert(_ target: @escaping (UInt) -> Void, for observer: CFRunLoopObserver) {
        targets.withLock { $0[Self.key(observer)] = target }
    }

    fileprivate func remove(_ observer: CFRunLoopObserver) {
        let removed = targets.withLock { $0.removeValue(forKey: Self.key(observer)) }
        _ = removed // released here, outside the lock
    }

    fileprivate func target(of observer: CFRunLoopObserver) -> ((UInt) -> Void)? {
        targets.withLock { $0[Self.key(observer)] }
    }

    /// How many observers have a target (tests: a cancelled observer leaves none behind).
    var count: Int { targets.withLock { $0.count } }

    private static func key(_ observer: CFRunLoopObserver) -> UnsafeMutableRawPointer {
        Unmanaged.passUnretained(observer).toOpaque()
    }
}
