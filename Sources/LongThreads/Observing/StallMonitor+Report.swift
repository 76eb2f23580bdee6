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

        /// How a report's ``Report/stack`` was taken.
        ///
        /// - Threading: a value.
        public enum StackSource: Sendable, Hashable, CustomStringConvertible {
            /// With the capture signal, from the thread itself: it was running, or asleep in a
            /// call the kernel restarts unseen after the handler (a futex wait, a `read` that had
            /// moved nothing, ...).
            case signal
            /// Walked from the kernel's wait record (`/proc/self/task/<tid>/syscall`: the stack
            /// pointer and instruction of the call) by frame pointers, the thread asleep and not
            /// interrupted: a `write` that had moved bytes, `poll`, `select`, `epoll_wait`, a sleep.
            /// ``Report/kernelWait`` says what it waited in.
            case kernelWaitRecord
            /// No stack: ``Report/stackNote`` says why.
            case unavailable

            /// `taken with a signal`, `read from the kernel's wait record, not interrupted`, or
            /// `not available`.
            public var description: String {
                switch self {
                case .signal: "taken with a signal"
                case .kernelWaitRecord: "read from the kernel's wait record, not interrupted"
                case .unavailable: "not available"
                }
            }
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
        /// library's frames marked and the run loop's frames under the work trimmed; how it was
        /// taken is ``stackSource``. Empty for ``Kind/slowDelivery``, and when the stack could not
        /// be taken (see ``stackNote``). Either unwinder can stop early: `backtrace(3)` (the
        /// signal's) was seen once to give a sample taken 9 bytes into `NSCondition.lock()`
        /// (libFoundation) and none of its callers; the walk from the wait record ends at the first
        /// caller built without frame pointers.
        public var stack: [StallMonitor.Frame]
        /// Why ``stack`` is empty for a ``Kind/slowDispatch`` report (capture off, the callout
        /// ended meanwhile, the thread blocks the signal, its stack could not be walked); nil
        /// otherwise.
        public var stackNote: String?
        /// For a ``Kind/slowDispatch`` report of a thread asleep in the kernel in a call that is
        /// not signalled (a `write` that had moved bytes, `poll`, `select`, a sleep, or a page
        /// fault): what it waited in (the system call, the wait channel, the C library function
        /// that made the call); ``stack`` then holds the frames walked from that wait. Nil when
        /// the thread was running, or waited in a call the kernel restarts unseen (a lock, a
        /// condition, a `read`): then the signal took ``stack``. Nil for ``Kind/slowDelivery``
        /// too. See "What a report contains" in ``StallMonitor``.
        public var kernelWait: StallMonitor.KernelWait? = nil
        /// How ``stack`` was taken: ``StackSource/unavailable`` when it is empty (and for
        /// ``Kind/slowDelivery``).
        public var stackSource: StackSource = .unavailable

        /// One line for logs (the thread, the kind, the label, the time, how the stack was taken
        /// or why there is none), the kernel wait if any, then the stack, one frame per line
        /// (``Frame/description``).
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
            if kind == .slowDispatch {
                text += stackSource == .unavailable ? " (no stack: \(stackNote ?? "not captured"))" : " (stack \(stackSource))"
            }
            if let kernelWait { text += "\n  asleep in the kernel: \(kernelWait)" }
            for (index, frame) in stack.enumerated() { text += "\n  #\(index) \(frame)" }
            return text
        }
    }
}
