import ExampleSupport
import Foundation
import LongThreads

/// The Weex example end to end: the program `longthread-demo` runs and the tests drive.
public enum WeexExample {
    /// A page in the shape Weex's JS framework emits: a column with a header row, a content area
    /// that takes the free space, and a footer row of a fixed button and two flexible tabs.
    public static let samplePage = """
    {"type": "div", "ref": "root", "style": {"padding": 10}, "children": [
      {"type": "div", "ref": "header", "style": {"flexDirection": "row", "height": 60, "padding": 5}, "children": [
        {"type": "image", "ref": "logo", "style": {"width": 50}},
        {"type": "text", "ref": "title", "style": {"flex": 1}}
      ]},
      {"type": "div", "ref": "content", "style": {"flex": 1}},
      {"type": "div", "ref": "footer", "style": {"flexDirection": "row", "height": 50}, "children": [
        {"type": "text", "ref": "back", "style": {"width": 55}},
        {"type": "text", "ref": "tab1", "style": {"flex": 1}},
        {"type": "text", "ref": "tab2", "style": {"flex": 2}}
      ]}
    ]}
    """

    /// What a run did.
    public struct Report: Sendable {
        /// The frames the main thread applied for ``samplePage``, by ref.
        public var views: [String: WXFrame]
        /// The thread each step of the render ran on, in order.
        public var trace: [(phase: WXSDKInstance.Phase, thread: String)]
        /// The error reported for a page that uses an unregistered component.
        public var badPageError: WXRenderError?
        /// The error reported for a render after ``WXSDKEngine/unload()``.
        public var afterUnloadError: WXRenderError?
        /// The nice value of the main thread and of the two SDK threads.
        public var mainNice: Int32
        public var bridgeNice: Int32
        public var componentNice: Int32
        /// Whether both SDK threads ended.
        public var threadsStopped: Bool
    }

    /// Runs the example: registration, a render, a failing render, unload. It runs the main
    /// thread's run loop while it waits for results; called from a thread that is not the
    /// process's main thread (after an `await` in top-level code, or in a test), it makes the
    /// calling thread stand in for it (``WXMainThread/adoptCurrentThread()``).
    ///
    /// The SDK's threads are singletons: after this returns they are stopped for good, so call
    /// it once per process.
    @discardableResult
    public static func run(log: (String) -> Void = { print($0) }) throws -> Report {
        if !Thread.isMainThread {
            WXMainThread.adoptCurrentThread()
            log("the main thread is parked in dispatchMain(); this thread's run loop stands in for it")
        }

        // 1. Lazily created singletons, from several threads at once: one thread each.
        let racers = 4
        let seen = Protected<Set<ObjectIdentifier>>([])
        DispatchQueue.concurrentPerform(iterations: racers) { _ in
            let pair = [ObjectIdentifier(WXBridgeManager.jsThread), ObjectIdentifier(WXComponentManager.componentThread)]
            seen.withLock { $0.formUnion(pair) }
        }
        log("\(racers) threads raced to create the singletons; \(seen.withLock { $0.count }) threads exist: \(WXBridgeManager.jsThread.name ?? ""), \(WXComponentManager.componentThread.name ?? "")")

        let mainNice = WXThreadPriority.currentThreadNice()
        let bridgeNice = try WXBridgeManager.jsThread.sync { WXThreadPriority.currentThreadNice() }
        let componentNice = try WXComponentManager.componentThread.sync { WXThreadPriority.currentThreadNice() }
        log("scheduling: main thread \(WXThreadPriority.mainThreadPolicy()); bridge nice \(bridgeNice), component nice \(componentNice)")

        // 2. Registration, on the bridge thread.
        try WXSDKEngine.registerModule("modal", methods: ["alert", "toast"])
        try WXSDKEngine.registerModule("stream", methods: ["fetch"])
        for component in ["div", "text", "image"] { try WXSDKEngine.registerComponent(component) }
        log("registered on \(WX_BRIDGE_THREAD_NAME): modules \(try WXSDKEngine.registeredModules().keys.sorted()), components \(try WXSDKEngine.registeredComponents().sorted())")

        // 3. A render: bridge -> component (layout) -> main thread's run loop.
        let errors = Protected<[WXRenderError]>([])
        let page = WXSDKInstance(onFailed: { error in errors.withLock { $0.append(error) } })
        page.render(samplePage)
        guard WXMainThread.run(until: { page.isFinished }) else { throw WeexExampleError.timedOut("render") }
        if let error = errors.withLock({ $0.last }) { throw WeexExampleError.renderFailed(error) }
        log("render: " + page.trace.map { "\($0.phase.rawValue) on \($0.thread)" }.joined(separator: " -> "))
        let views = page.views
        for ref in ["root", "header", "logo", "title", "content", "footer", "back", "tab1", "tab2"] {
            log("  \(ref.padding(toLength: 8, withPad: " ", startingAt: 0)) \(views[ref].map(String.init(describing:)) ?? "missing")")
        }

        // 4. A page with an unregistered component: a clear error, on the main thread.
        let bad = WXSDKInstance(onFailed: { error in errors.withLock { $0.append(error) } })
        bad.render(#"{"type": "div", "children": [{"type": "video"}]}"#)
        guard WXMainThread.run(until: { bad.isFinished }) else { throw WeexExampleError.timedOut("bad render") }
        let badPageError = errors.withLock { $0.last }
        log("a page using an unregistered component fails: \(badPageError.map { "\($0)" } ?? "no error")")

        // 5. Unload: the threads stop in the direction work flows, each draining, then the main
        //    loop runs until every result queued for it has been applied. Nothing is lost.
        let last = WXSDKInstance()
        last.render(samplePage) // still in flight when unload begins
        WXSDKEngine.unload()
        guard WXMainThread.runUntilIdle() else { throw WeexExampleError.timedOut("unload") }
        log("unload: the render queued just before it finished too (\(last.views.count) views); threads stopped: \(WXBridgeManager.jsThread), \(WXComponentManager.componentThread)")

        let late = WXSDKInstance(onFailed: { error in errors.withLock { $0.append(error) } })
        late.render(samplePage)
        guard WXMainThread.run(until: { late.isFinished }) else { throw WeexExampleError.timedOut("late render") }
        let afterUnloadError = errors.withLock { $0.last }
        log("a render after unload is refused: \(afterUnloadError.map { "\($0)" } ?? "no error")")

        return Report(
            views: views, trace: page.trace, badPageError: badPageError, afterUnloadError: afterUnloadError,
            mainNice: mainNice, bridgeNice: bridgeNice, componentNice: componentNice,
            threadsStopped: !WXBridgeManager.jsThread.isRunning && !WXComponentManager.componentThread.isRunning
                && last.views.count == views.count
        )
    }
}

/// The example waited longer than it should have.
public enum WeexExampleError: Error {
    case timedOut(String)
    /// The sample page failed to render.
    case renderFailed(WXRenderError)
}
