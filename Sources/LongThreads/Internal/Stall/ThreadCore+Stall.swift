/// What a watched thread does for its stall monitors besides timing callouts (`ThreadCore+Callouts`).
extension ThreadCore {
    /// Items waiting: queued, or taken into the batch and not yet started. Any thread.
    var pendingCount: Int {
        shared.withLock { $0.queue.count } + batchWaiting.load(ordering: .relaxed)
    }

    /// Under the `monitors` lock, after the list changed: whether the loop times items and posts,
    /// and the delivery threshold it checks.
    func noteMonitorsChanged(_ monitors: [StallMonitorState]) {
        let thresholds = monitors.map(\.deliveryThreshold).filter { $0 != 0 }
        watch.deliveryThreshold.store(thresholds.min() ?? 0, ordering: .relaxed)
        if monitors.isEmpty {
            hints.bitwiseAnd(~Hints.monitored, ordering: .relaxed)
        } else {
            hints.bitwiseOr(Hints.monitored, ordering: .relaxed)
        }
    }

    /// Loop thread, timing: `item` starts `waited` after its post. Reports a slow delivery once
    /// per backlog (Android's Looper does the same): again only after an item started on time.
    @inline(__always)
    func checkDelivery(of item: WorkItem, waited: UInt64) {
        let limit = watch.deliveryThreshold.load(ordering: .relaxed)
        guard limit != 0 else { return }
        guard waited >= limit else {
            loop.slowDeliveryReported = false
            return
        }
        guard !loop.slowDeliveryReported else { return }
        loop.slowDeliveryReported = true
        let depth = pendingCount
        let label = item.label
        watch.monitors.withLock { monitors in
            for monitor in monitors { monitor.deliveredLate(self, label: label, waited: waited, queueDepth: depth) }
        }
    }
}
