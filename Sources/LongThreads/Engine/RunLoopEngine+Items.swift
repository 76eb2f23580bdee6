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
        for mode in modes {
            let name = Self.cfMode(mode)
            switch item.object {
            case .timer(let timer): CFRunLoopAddTimer(runLoop, timer, name)
            case .observer(let observer): CFRunLoopAddObserver(runLoop, observer, name)
            case .source(let source): CFRunLoopAddSource(runLoop, source, name)
            }
        }
    }

    /// Adds `mode` to the loop's common modes: CF copies every common-mode item into it.
    func addCommonMode(_ mode: RunLoop.Mode) {
        CFRunLoopAddCommonMode(runLoop, Self.cfMode(mode))
    }
}

/// One CF timer, observer or version-1 source. `invalidate()` is thread-safe and removes it from
/// every mode; the callout target is released when CF frees the object.
final class EngineItem: @unchecked Sendable {
    enum Object {
        case timer(CFRunLoopTimer)
        case observer(CFRunLoopObserver)
        case source(CFRunLoopSource)
    }

    let object: Object

    private init(_ object: Object) { self.object = object }

    func invalidate() {
        switch object {
        case .timer(let timer): CFRunLoopTimerInvalidate(timer)
        case .observer(let observer): CFRunLoopObserverInvalidate(observer)
        case .source(let source): CFRunLoopSourceInvalidate(source)
        }
    }

    // MARK: - Timers

    /// A timer first firing after `delay`, then every `interval` (nil: once). CF skips missed fire
    /// times instead of bunching them: the next fire moves forward by whole intervals past now.
    static func timer(after delay: Duration, interval: Duration?, target: @escaping () -> Void) -> EngineItem {
        var context = CFRunLoopTimerContext()
        context.info = Unmanaged.passRetained(Callout(target)).toOpaque()
        context.release = { Unmanaged<Callout>.fromOpaque($0!).release() }
        let fireDate = CFAbsoluteTimeGetCurrent() + delay.seconds
        let timer = CFRunLoopTimerCreate(nil, fireDate, interval.map(\.seconds) ?? 0, 0, 0, { _, info in
            Unmanaged<Callout>.fromOpaque(info!).takeUnretainedValue().run()
        }, &context)!
        return EngineItem(.timer(timer))
    }

    /// Moves a timer's next fire date to `delay` from now (a deadline for a nested run).
    static func fireDate(after delay: Duration) -> CFAbsoluteTime {
        CFAbsoluteTimeGetCurrent() + delay.seconds
    }

    // MARK: - Observers

    static func observer(activities: UInt, order: Int, target: @escaping (UInt) -> Void) -> EngineItem {
        var context = CFRunLoopObserverContext()
        context.info = Unmanaged.passRetained(ActivityCallout(target)).toOpaque()
        context.release = { Unmanaged<ActivityCallout>.fromOpaque($0!).release() }
        let observer = CFRunLoopObserverCreate(nil, CFOptionFlags(activities), true, order, { _, activity, info in
            Unmanaged<ActivityCallout>.fromOpaque(info!).takeUnretainedValue().run(UInt(activity.rawValue))
        }, &context)!
        return EngineItem(.observer(observer))
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

    private final class ActivityCallout {
        let run: (UInt) -> Void
        init(_ run: @escaping (UInt) -> Void) { self.run = run }
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
        let timer = EngineItem.timer(after: deadline, interval: nil) {
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
