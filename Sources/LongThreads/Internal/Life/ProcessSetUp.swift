import Synchronization

/// What the process's first LongThread would otherwise set up on its own new stack, done once on
/// the creator's thread before the first pthread is spawned (`ThreadCore.start`).
///
/// - CF makes the main thread's run loop the first time any thread asks for one: the first
///   `CFRunLoopGetCurrent` of a process makes two loops, 6 descriptors where a later thread's
///   start takes 3. Made here, under the headroom's lock and through its probe
///   (`DescriptorHeadroom`), the main thread's loop takes its own 3, and an out-of-descriptors
///   process gets `EMFILE` thrown instead of CF halting it.
/// - The Swift runtime runs a lazily-initialised static's initialiser, and instantiates its
///   type's metadata, where it is first used: the headroom's lock and the thread-specific key
///   are made here, off the new thread's stack. (Metadata other code instantiates first on a
///   loop thread is counted in `StackReserve.ownFrames`.)
enum ProcessSetUp {
    private static let done = Atomic<Bool>(false)

    /// Creator's thread: does the set-up unless done; throws `.outOfResources` when the main
    /// thread's loop cannot get its descriptors (nothing is done then; the next start tries again).
    static func ensureDone() throws(LongThreadError) {
        if done.load(ordering: .acquiring) { return }
        try RunLoopEngine.makeMainRunLoop()
        _ = ThreadCore.currentKey
        // Two creators may both get here: the work above is idempotent.
        done.store(true, ordering: .releasing)
    }
}
