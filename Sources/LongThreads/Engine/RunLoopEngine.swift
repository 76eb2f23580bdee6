import CLongThreadsShims
import CoreFoundation
import Glibc
import Synchronization

/// What the engine reports to the thread it serves. Loop thread only.
protocol RunLoopEngineDelegate: AnyObject {
    /// The work source fired: run what the current mode may run.
    func engineServiceWork(_ engine: RunLoopEngine)
    /// A run of the loop began (the outer run, or a nested one inside a task).
    func engineDidEnterRun(_ engine: RunLoopEngine)
    /// A run of the loop ended.
    func engineDidExitRun(_ engine: RunLoopEngine)
    /// The loop woke from sleep.
    func engineDidWake()
    /// The timer source fired (a deadline passed, or due timers may run in the mode entered).
    func engineServiceTimers(_ engine: RunLoopEngine)
    /// Whether the calling thread holds the lock that guards the engine's shared fields (the
    /// thread's lock): debug builds check it on each access to them. Any thread.
    var holdsEngineLock: Bool { get }
}

/// The CFRunLoop of one thread: the only type that touches CoreFoundation's run loop, so the engine
/// could be replaced if a toolchain ever stopped shipping the module.
///
/// Made on the loop thread. It holds:
/// - one version-0 source that carries all queued work: producers signal it and wake the loop.
///   Being in a mode, it also keeps that mode alive (CF returns from a run of an empty mode at
///   once). No separate keep-alive source: in CF a version-1 source whose port is -1 does nothing
///   but count in `__CFRunLoopModeIsEmpty`, which the work source already answers, and it cost
///   about 10,000 instructions per thread's life (callgrind);
/// - once the thread has lived a millisecond (`installWakePort()`), its own wake-up: a version-1
///   source whose port is an eventfd of the library's own. From then on a producer that finds
///   the loop asleep only writes that eventfd, and the source's perform runs the queued work.
///   Until then, it signals the work source and calls `CFRunLoopWakeUp`, which writes CF's
///   wake-up eventfd while holding the run loop's lock, the lock the woken loop takes first
///   thing: on a busy machine the loop thread then often wakes only to block on that lock and
///   wait for a second wake-up. The port also saves a pass: CF runs the source that woke it at once (3,373
///   instructions per wake-up and reply against 4,266, callgrind). Not from the start: the
///   eventfd and CF's bookkeeping for a port source cost a thread's life about 11,000
///   instructions and 5 system calls, 6 µs with two CPU hogs beside it (+10%), which a thread that
///   ends within a millisecond never wins back;
/// - one observer for entry and exit (nested runs: any task may run the loop itself), and for
///   after-waiting only when someone counts wake-ups (an owner to check, an instrument, or a
///   reader of `statistics`): that callout costs CF a pass over its observers on every wake-up.
///   Counting can begin later (`countWakeUps()`), with a second observer;
/// - for `LongThreadTimer`s, made by the first one (`armTimers(for:)`): one CF timer armed for the
///   earliest deadline of the thread's `TimerSchedule`, whose callout only signals one more
///   version-0 source, which runs the due timers. Timers run from a source, not from CF's timer
///   callout, because CF never calls a timer out again while its callout runs: a timer's work that
///   ran the loop nested would hold back every other timer of the thread.
/// All are in the default mode and in each custom mode work is posted in (`add(modeNamed:)`),
/// not in CF's common modes: every mode work can run in is registered with the thread, so the
/// common-mode bookkeeping only cost CF instructions (about 16,000 per thread's life, callgrind).
final class RunLoopEngine: @unchecked Sendable {
    // MARK: Immutable (CF's signal, wake-up and add calls are thread-safe)
    let runLoop: CFRunLoop
    private let workSource: CFRunLoopSource
    private let observer: CFRunLoopObserver
    /// The wake-up port's eventfd once installed, else -1 (see above). Read by producers without
    /// the lock; the descriptor stays open while the engine lives (`wakePort`), so a producer
    /// that holds the engine writes an open one.
    private let wakeDescriptor = Atomic<Int32>(-1)
    /// What the sources' and the observer's info pointers point at (unretained: the engine keeps it
    /// alive, and they call out only while the loop runs, which ends before the engine goes).
    private let callouts: Callouts

    // MARK: Guarded by the thread's lock (`ThreadCore.shared`; checked in debug builds, `assertLockHeld`)
    /// The wake-up port and its source, once installed.
    private var wakePort: (port: WakePort, source: CFRunLoopSource)?
    /// The after-waiting observer added by `countWakeUps()` once the loop runs, if any.
    private var wakeObserver: CFRunLoopObserver?
    /// The custom modes added so far (`add(modeNamed:)`), for a wake observer added later.
    private var customModes: [CFString] = []
    /// Whether the engine reports wake-ups (`engineDidWake`). Written on the loop thread.
    private(set) var countingWakeUps: Bool
    /// The timer machinery (see above), made by the first timer. The loop thread reads it without
    /// the lock after a section under it saw a due timer (`signalTimers`).
    private var timers: (deadline: CFRunLoopTimer, source: CFRunLoopSource)?

    // MARK: Loop thread only
    /// The last mode `currentModeName()` converted. Seeded with the default mode, whose name
    /// object CF hands back unchanged (a constant string's copy is itself): the first entry
    /// callout and drain of every thread then skip a CF string conversion and an allocation.
    private var lastMode: (object: CFString, name: String) = (kCFRunLoopDefaultMode, "kCFRunLoopDefaultMode")

    /// Effectively infinite: CF treats anything above about 5.05e8 s as "no timeout". A finite
    /// timeout arms a libdispatch timer on an overcommit queue each run (up to ~256 threads).
    static let forever: CFTimeInterval = 1e10

    /// Loop thread only. Throws `.outOfResources` instead of letting CF halt the process when the
    /// descriptors for the loop cannot be had (`DescriptorHeadroom`).
    /// `countsWakeUps`: report every wake-up from the start (`engineDidWake`).
    init(delegate: any RunLoopEngineDelegate, countsWakeUps: Bool) throws(LongThreadError) {
        callouts = Callouts(delegate: delegate)
        let info = Unmanaged.passUnretained(callouts).toOpaque()
        runLoop = try DescriptorHeadroom.withDescriptors(DescriptorHeadroom.runLoop) { CFRunLoopGetCurrent() }
        workSource = Self.makeWorkSource(info: info)
        var activities = CFRunLoopActivity.entry.rawValue | CFRunLoopActivity.exit.rawValue
        if countsWakeUps { activities |= CFRunLoopActivity.afterWaiting.rawValue }
        observer = Self.makeObserver(activities: activities, info: info)
        countingWakeUps = countsWakeUps
        callouts.engine = self
        add(toMode: kCFRunLoopDefaultMode)
    }

    /// Creator's thread, once per process before the first loop thread starts
    /// (`ProcessSetUp`): makes the main thread's run loop under the headroom's rule, so that CF
    /// takes its descriptors here, or `.outOfResources` is thrown instead of CF halting.
    static func makeMainRunLoop() throws(LongThreadError) {
        try DescriptorHeadroom.withDescriptors(DescriptorHeadroom.runLoop) { _ = CFRunLoopGetMain() }
    }

    // MARK: - Any thread

    /// Marks the work source ready; the loop runs it in its next pass.
    @inline(__always)
    func signal() { CFRunLoopSourceSignal(workSource) }

    /// Has the loop run the queued work soon: wakes it if it sleeps. Once the wake-up port is
    /// installed, one eventfd write, no lock, never lost (the count stays until the loop reads it
    /// in a run of a mode the thread has). Before, a signal of the work source and
    /// `CFRunLoopWakeUp` (lost if the loop is between two runs, which the signal covers).
    @inline(__always)
    func wake() {
        let descriptor = wakeDescriptor.load(ordering: .relaxed)
        if descriptor >= 0 {
            CLongThreadsShims_eventfdSignal(descriptor)
        } else {
            CFRunLoopSourceSignal(workSource)
            CFRunLoopWakeUp(runLoop)
        }
    }

    /// Ends the run the loop is in for a stop. Any thread. CF's own stop wakes a sleeping loop,
    /// which then leaves its run straight after waking: no pass through the drain, which, finding
    /// the stop, would have to stop the run itself, and CF's stop from inside a pass costs a second
    /// wake-up (a write, and the read of it by the next poll). The work source is signalled too:
    /// a stop that finds the loop between two runs is lost to CF, and the next run's drain sees it.
    func stopRun() {
        CFRunLoopSourceSignal(workSource)
        CFRunLoopStop(runLoop)
    }

    /// Loop thread, under the thread's lock, while the loop lives: installs the wake-up port (see
    /// the type's notes) in every mode the thread has. Once; does nothing when its descriptor
    /// cannot be had (the thread keeps CF's wake-up, which works as well, only slower).
    func installWakePort() {
        assertLockHeld()
        guard wakePort == nil else { return }
        // Under the headroom's lock, as CF's descriptors: a slot its probe freed for CF on another
        // thread must not be taken here meanwhile.
        guard let descriptor = try? DescriptorHeadroom.withDescriptors(1, { CLongThreadsShims_eventfd(0) }),
              descriptor >= 0
        else { return }
        let port = WakePort(descriptor: descriptor, callouts: callouts)
        let source = Self.makeWakeSource(port)
        CFRunLoopAddSource(runLoop, source, kCFRunLoopDefaultMode)
        for mode in customModes { CFRunLoopAddSource(runLoop, source, mode) }
        wakePort = (port, source)
        // After the source is in every mode. A producer that still read -1 signals and wakes
        // through CF: both sources run the same work.
        wakeDescriptor.store(descriptor, ordering: .relaxed)
    }

    /// Whether the wake-up port is installed (tests).
    var hasWakePort: Bool { wakeDescriptor.load(ordering: .relaxed) >= 0 }

    /// Puts the sources and the observers in the custom mode `name`, which makes CF create it. Call
    /// it only while the loop thread lives, under the thread's lock: a source added to the loop of
    /// an exited thread forms a retain cycle and leaks. Throws `.outOfResources` when CF could not
    /// get the mode's descriptors.
    func add(modeNamed name: String) throws(LongThreadError) {
        assertLockHeld()
        let mode = Self.cfString(name)
        try DescriptorHeadroom.withDescriptors(DescriptorHeadroom.mode) { add(toMode: mode) }
        customModes.append(mode)
        if let wakeObserver { CFRunLoopAddObserver(runLoop, wakeObserver, mode) }
        if let wakePort { CFRunLoopAddSource(runLoop, wakePort.source, mode) }
        if let timers { add(timers, toMode: mode) }
    }

    /// Arms the thread's CF timer for `deadline` (monotonic nanoseconds), making it on first use.
    /// Any thread, under the thread's lock, only while the loop lives. A deadline already past
    /// fires at the loop's next pass. (Never disarmed: after it fires, CF moves it by its interval,
    /// CF's longest, until the next call.)
    func armTimers(for deadline: UInt64) {
        assertLockHeld()
        let timers = self.timers ?? makeTimers()
        let now = CLongThreadsShims_monotonicNanoseconds()
        let seconds = deadline > now ? Double(deadline - now) / 1e9 : 0
        CFRunLoopTimerSetNextFireDate(timers.deadline, CFAbsoluteTimeGetCurrent() + seconds)
    }

    /// Due timers may run in the mode the loop runs: runs the timer source in its next pass. Under
    /// the thread's lock (which guards `timers`), or on the loop thread after a section under it
    /// saw a due timer (due timers exist only once `timers` was made).
    func signalTimers() {
        if let timers { CFRunLoopSourceSignal(timers.source) }
    }

    /// Loop thread, under the thread's lock: from now on reports every wake-up, in every mode the
    /// thread has (those added later too). Once; later calls do nothing. On the loop thread, so
    /// the new observer never races a pass of the loop over its observers.
    func countWakeUps() {
        assertLockHeld()
        guard !countingWakeUps else { return }
        countingWakeUps = true
        let wakeObserver = Self.makeObserver(
            activities: CFRunLoopActivity.afterWaiting.rawValue,
            info: Unmanaged.passUnretained(callouts).toOpaque()
        )
        CFRunLoopAddObserver(runLoop, wakeObserver, kCFRunLoopDefaultMode)
        for mode in customModes { CFRunLoopAddObserver(runLoop, wakeObserver, mode) }
        self.wakeObserver = wakeObserver
    }

    // MARK: - Loop thread only

    /// Runs the loop in `mode` until something stops this run.
    func run(modeNamed mode: String) {
        _ = CFRunLoopRunInMode(Self.cfString(mode), Self.forever, false)
    }

    /// Runs the default mode until something stops this run.
    func runDefaultMode() {
        _ = CFRunLoopRunInMode(kCFRunLoopDefaultMode, Self.forever, false)
    }

    /// Stops the innermost run of the loop.
    func stopInnermostRun() { CFRunLoopStop(runLoop) }

    /// The mode the loop runs in now, or nil when it does not run. CF hands back the same name
    /// object for a mode each time, so the conversion to `String` is cached on its identity.
    func currentModeName() -> String? {
        guard let mode = CFRunLoopCopyCurrentMode(runLoop) else { return nil }
        if lastMode.object === mode { return lastMode.name }
        let name = Self.string(mode)
        lastMode = (mode, name)
        return name
    }

    /// The engine's sources and observers are not taken out of their modes when a spawned thread's
    /// loop exits: CF's thread-exit finaliser removes every source from every mode, and the
    /// loop's deallocation invalidates its observers, so removing them first would do the same work
    /// at a higher price (invalidating one CF object walks every mode of every loop it is in:
    /// ~13,000 instructions per life, callgrind).
    ///
    /// Loop thread, once the loop has exited, on a thread that outlives its loop
    /// (`LongThread.runCurrentThread`): takes the engine's sources, observers and timer out of every
    /// mode, which CF's thread-exit finaliser does for a spawned thread. A producer still holding
    /// the engine then signals an invalid source, which CF ignores.
    func removeFromLoop() {
        for source in loopObjects.sources { CFRunLoopSourceInvalidate(source) }
        for observer in loopObjects.observers { CFRunLoopObserverInvalidate(observer) }
        for timer in loopObjects.timers { CFRunLoopTimerInvalidate(timer) }
    }

    /// The engine's own CF objects in the loop. Under the thread's lock, or on the loop thread
    /// once the engine is out of the shared state.
    struct LoopObjects: @unchecked Sendable {
        var sources: [CFRunLoopSource]
        var observers: [CFRunLoopObserver]
        var timers: [CFRunLoopTimer]
    }

    var loopObjects: LoopObjects {
        LoopObjects(
            sources: [workSource] + [wakePort?.source, timers?.source].compactMap { $0 },
            observers: [observer] + [wakeObserver].compactMap { $0 },
            timers: [timers?.deadline].compactMap { $0 }
        )
    }

    /// Debug builds: traps unless the caller holds the thread's lock, which guards the fields
    /// marked so (the loop thread's own reads after a section under it are not checked).
    @inline(__always)
    func assertLockHeld(_ function: StaticString = #function) {
        #if DEBUG
        assert(callouts.delegate.holdsEngineLock,
               "BUG IN LongThreads: engine state guarded by the thread's lock touched without it (\(function))")
        #endif
    }

    // MARK: - Callouts

    /// Loop thread only. The delegate owns the thread, so it outlives every callout.
    private final class Callouts {
        unowned(unsafe) let delegate: any RunLoopEngineDelegate
        /// The engine these callouts come from, handed to each: the loop thread keeps no
        /// reference of its own (set once the engine is made; it outlives every callout).
        unowned(unsafe) var engine: RunLoopEngine?

        init(delegate: any RunLoopEngineDelegate) { self.delegate = delegate }

        static func from(_ info: UnsafeMutableRawPointer?) -> Callouts {
            Unmanaged<Callouts>.fromOpaque(info!).takeUnretainedValue()
        }

        @inline(__always)
        func serviceWork() { delegate.engineServiceWork(engine!) }

        func serviceTimers() { delegate.engineServiceTimers(engine!) }

        func observe(_ activity: CFRunLoopActivity) {
            switch activity {
            case .entry: delegate.engineDidEnterRun(engine!)
            case .exit: delegate.engineDidExitRun(engine!)
            case .afterWaiting: delegate.engineDidWake()
            default: break
            }
        }
    }

    /// The wake-up port's eventfd, owned by the engine and by CF's source: closed when both are
    /// gone. `callouts` is read only by the perform, which CF calls only while the loop runs.
    private final class WakePort {
        let descriptor: Int32
        unowned(unsafe) let callouts: Callouts
        init(descriptor: Int32, callouts: Callouts) {
            self.descriptor = descriptor
            self.callouts = callouts
        }
        deinit { close(descriptor) }
    }

    // MARK: - Construction

    /// The version-1 wake-up source. Its context retains the port: CF asks a source for its port
    /// when it removes it from a mode, which its thread-exit finaliser does after the engine is gone.
    private static func makeWakeSource(_ port: WakePort) -> CFRunLoopSource {
        var context = CFRunLoopSourceContext1()
        context.version = 1
        context.info = Unmanaged.passRetained(port).toOpaque()
        context.release = { Unmanaged<WakePort>.fromOpaque($0!).release() }
        context.getPort = { Unmanaged<WakePort>.fromOpaque($0!).takeUnretainedValue().descriptor }
        context.perform = { Unmanaged<WakePort>.fromOpaque($0!).takeUnretainedValue().callouts.serviceWork() }
        return withUnsafeMutablePointer(to: &context) {
            $0.withMemoryRebound(to: CFRunLoopSourceContext.self, capacity: 1) { CFRunLoopSourceCreate(nil, 0, $0)! }
        }
    }

    private func makeTimers() -> (deadline: CFRunLoopTimer, source: CFRunLoopSource) {
        var context = CFRunLoopSourceContext()
        context.version = 0
        context.info = Unmanaged.passUnretained(callouts).toOpaque()
        context.perform = { info in Callouts.from(info).serviceTimers() }
        let source = CFRunLoopSourceCreate(nil, 0, &context)!
        // The CF timer's info is the source (the engine keeps both). It repeats so that CF never
        // invalidates it after a callout; its interval is CF's longest, and `armTimers` sets each
        // next fire date.
        var timerContext = CFRunLoopTimerContext()
        timerContext.info = Unmanaged.passUnretained(source).toOpaque()
        let deadline = CFRunLoopTimerCreate(nil, .greatestFiniteMagnitude, 1e9, 0, 0, { _, info in
            CFRunLoopSourceSignal(Unmanaged<CFRunLoopSource>.fromOpaque(info!).takeUnretainedValue())
        }, &timerContext)!
        let made = (deadline: deadline, source: source)
        add(made, toMode: kCFRunLoopDefaultMode)
        for mode in customModes { add(made, toMode: mode) }
        timers = made
        return made
    }

    private func add(_ timers: (deadline: CFRunLoopTimer, source: CFRunLoopSource), toMode mode: CFString) {
        CFRunLoopAddSource(runLoop, timers.source, mode)
        CFRunLoopAddTimer(runLoop, timers.deadline, mode)
    }

    private func add(toMode mode: CFString?) {
        CFRunLoopAddSource(runLoop, workSource, mode)
        CFRunLoopAddObserver(runLoop, observer, mode)
    }

    private static func makeWorkSource(info: UnsafeMutableRawPointer) -> CFRunLoopSource {
        var context = CFRunLoopSourceContext()
        context.version = 0
        context.info = info
        context.perform = { info in Callouts.from(info).serviceWork() }
        return CFRunLoopSourceCreate(nil, 0, &context)!
    }

    // Order `.min`: the thread's own bookkeeping runs before any observer a user adds.
    private static func makeObserver(activities: CFOptionFlags, info: UnsafeMutableRawPointer) -> CFRunLoopObserver {
        var context = CFRunLoopObserverContext()
        context.info = info
        return CFRunLoopObserverCreate(nil, activities, true, .min, { _, activity, info in
            Callouts.from(info).observe(activity)
        }, &context)!
    }

    static func cfString(_ string: String) -> CFString {
        CFStringCreateWithCString(nil, string, CFStringBuiltInEncodings.UTF8.rawValue)!
    }

    static func string(_ cfString: CFString) -> String {
        let length = CFStringGetLength(cfString)
        let capacity = CFStringGetMaximumSizeForEncoding(length, CFStringBuiltInEncodings.UTF8.rawValue) + 1
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: capacity) { buffer in
            guard CFStringGetCString(cfString, buffer.baseAddress, capacity, CFStringBuiltInEncodings.UTF8.rawValue)
            else { return "" }
            return String(cString: buffer.baseAddress!)
        }
    }
}
