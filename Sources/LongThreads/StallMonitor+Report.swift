extension StallMonitor {
    /// One stall: a callout that ran too long, or an item that started too late.
    public struct Report: Sendable, CustomStringConvertible {
        /// The two kinds of slowness a monitor reports (Android's Looper has the same two).
        public enum Kind: Sendable, Hashable {
            /// One callout (a task, a timer, a descriptor handler) ran past
            /// ``StallMonitor/threshold``: ``Report/duration`` is how long it had run, and
            /// ``Report/stack`` is where the thread was then.
            case slowDispatch
            /// An item started more than ``StallMonitor/deliveryThreshold`` after it was posted:
            /// ``Report/duration`` is how long it waited; the thread was busy with earlier work.
            case slowDelivery
        }

        /// Which kind of stall this is.
        public var kind: Kind
        /// The stalled thread's name.
        public var threadName: String?
        /// The label of the callout or item, when it was posted with one (`perform(label:)`).
        public var label: String?
        /// How long the callout had run (``Kind/slowDispatch``) or the item had waited
        /// (``Kind/slowDelivery``) when it was reported.
        public var duration: Duration
        /// How many items were waiting on the thread when the stall was reported (queued, or
        /// taken into its batch and not yet started).
        public var queueDepth: Int
        /// The stalled thread's stack while the callout ran, innermost frame first, with the
        /// library's frames marked and the run loop's frames under the work trimmed. Empty for
        /// ``Kind/slowDelivery``, and when the stack could not be captured (see ``stackNote``).
        /// The unwinder (`backtrace(3)`) can stop early: seen once, a sample taken 9 bytes into
        /// `NSCondition.lock()` (libFoundation) gave that one frame and none of its callers.
        public var stack: [StallMonitor.Frame]
        /// Why ``stack`` is empty for a ``Kind/slowDispatch`` report (capture off, the callout
        /// ended meanwhile, the thread blocks the signal, the thread was asleep in the kernel);
        /// nil otherwise.
        public var stackNote: String?
        /// For a ``Kind/slowDispatch`` report of a thread asleep in the kernel (a blocking system
        /// call such as `read`, `write` or `poll`, or a page fault), which it was not interrupted
        /// in: where it waited, in place of ``stack``. Nil when the thread was running, and when
        /// it waited in a futex (a lock, a condition: the kernel restarts that wait unseen): then
        /// ``stack`` has its frames. Nil for ``Kind/slowDelivery`` too. See "What a report contains" in ``StallMonitor``.
        public var kernelWait: StallMonitor.KernelWait? = nil

        /// One line for logs (the thread, the kind, the label, the time), then the stack, one
        /// frame per line.
        public var description: String {
            let millis = Int(Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15)
            let thread = "LongThread \(threadName.map { "\"\($0)\"" } ?? "(unnamed)")"
            var text: String
            switch kind {
            case .slowDispatch:
                let what = label.map { "task \"\($0)\"" } ?? "a callout"
                text = "\(thread) stalled: \(what) has run for \(millis) ms"
            case .slowDelivery:
                let what = label.map { "task \"\($0)\"" } ?? "an item"
                text = "\(thread) delivered late: \(what) started \(millis) ms after its post, \(queueDepth) waiting"
            }
            if let stackNote { text += " (\(stackNote))" }
            if let kernelWait { text += "\n  asleep in the kernel: \(kernelWait)" }
            for (index, frame) in stack.enumerated() { text += "\n  #\(index) \(frame)" }
            return text
        }
    }
}
