import Synchronization

/// What a thread's stall monitors see of it: when the running callout began and under which
/// label, the thread's kernel id for a stack capture, and the monitors themselves.
///
/// Part of `ThreadCore` (`watch`), kept inline: a separate object would cost every thread's life
/// an allocation, monitored or not. The loop thread writes the callout's start and label
/// (`ThreadCore+Callouts`); monitors read them from their own thread (`StallMonitor`).
struct CalloutWatch: ~Copyable {
    /// When the callout running now began, monotonic ns; 0 while the loop is in its run loop
    /// (sleeping, between callouts, or inside a nested run). A callout is one item of a drain, a
    /// timer or a descriptor handler; a task resumes as a new callout when its nested run returns.
    /// The low bit (`ThreadCore.timedBit`) is set while the loop times each item: then the value
    /// changes at every item and callout boundary, always through `publishCalloutStart`. Written by
    /// the loop thread, read by stall monitors.
    let calloutStartedAt = Atomic<UInt64>(0)
    /// The label of the labelled item running now and the `calloutStartedAt` value it ran under:
    /// a monitor trusts the label only while that value is current. Written only while timed.
    let runningLabel = Locked<(label: String?, start: UInt64)>((nil, 0))
    /// Set by a monitor about to signal the loop thread for its stack: the loop then waits at its
    /// next callout boundary until the capture is over (`publishCalloutStart`), so the signal never
    /// lands in a later callout.
    let stackSampleRequested = Atomic<Bool>(false)
    /// The loop thread's kernel id, for a stall monitor's stack capture: 0 until the thread's
    /// first timed callout or item (`prepareForStackCapture`).
    let kernelThreadID = Atomic<Int32>(0)
    /// The smallest delivery threshold of the monitors watching this thread, ns; 0: none.
    let deliveryThreshold = Atomic<UInt64>(0)
    /// Set by a monitor that reported the callout running now and would sleep past its end: the
    /// next item's start wakes it (`ThreadCore.publishItemStart`), as a callout's start does.
    /// A sequentially consistent pair with the start's store (`StallMonitorState.scan`).
    let wakeMonitorsAtNextItem = Atomic<Bool>(false)
    /// The monitors watching this thread.
    let monitors = Locked<[StallMonitorState]>([])
}
