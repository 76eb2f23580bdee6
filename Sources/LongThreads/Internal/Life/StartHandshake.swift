import CLongThreadsShims

/// The start of a thread, between its creator (`ThreadCore.start`) and the new pthread
/// (`ThreadCore.threadMain`): the creator hands over its load sample and waits on `ready`; the
/// loop thread signals it once its run loop is ready to run (made, with its source, after
/// `Options.setUp`), or after recording why it cannot serve.
///
/// Each field is written by one side before the signal that lets the other read it
/// (`pthread_create` for the sample, `ready` for the rest), so no lock guards them.
struct StartHandshake {
    /// Signalled on the loop thread just before its run loop first runs (or when the start failed):
    /// the loop's entry bookkeeping then no longer delays the creator.
    let ready = OneShotEvent()
    /// The creator's load sample (its `WaitLearning.load`), written before the pthread starts.
    var creatorLoadSample = LoadSample()
    /// The CPU the loop thread signalled `ready` from (-1: unknown): the creator's first wait for
    /// a reply skips its spin when it runs there too (`WaitLearning.noteReplier`).
    var loopCPU: Int32 = -1
    /// errno of a failed start, written before `ready` is signalled.
    var startError: Int32?
    /// What `Options.setUp` threw, written before `ready` is signalled.
    var setUpError: (any Error)?
}
