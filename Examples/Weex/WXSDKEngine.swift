import LongThreads

/// Weex's `WXSDKEngine`: the SDK's entry points. Registration goes to the bridge thread, as in
/// Weex (`registerModule:withClass:` ends in `WXPerformBlockOnBridgeThread`).
public enum WXSDKEngine {
    /// Registers a module and the methods it exports to JavaScript, on the bridge thread.
    ///
    /// - Runs on: the bridge thread, after everything queued there before.
    /// - Throws: ``LongThreadError/stopped`` after ``unload()``.
    public static func registerModule(_ name: String, methods: [String]) throws(LongThreadError) {
        try WXPerformBlockOnBridgeThread {
            WXBridgeManager.context.registerModule(name, methods: methods)
        }
    }

    /// Registers a component type pages may use, on the bridge thread.
    ///
    /// - Throws: ``LongThreadError/stopped`` after ``unload()``.
    public static func registerComponent(_ name: String) throws(LongThreadError) {
        try WXPerformBlockOnBridgeThread {
            WXBridgeManager.context.registerComponent(name)
        }
    }

    /// What the bridge thread has registered (read on that thread, after earlier registrations).
    public static func registeredComponents() throws -> Set<String> {
        try WXBridgeManager.jsThread.sync { WXBridgeManager.context.registeredComponents }
    }

    /// Module names and their methods, read on the bridge thread.
    public static func registeredModules() throws -> [String: [String]] {
        try WXBridgeManager.jsThread.sync { WXBridgeManager.context.registeredModules }
    }

    /// Shuts the SDK down with nothing lost: Weex's `_stopRunning = YES`, made reliable.
    ///
    /// Weex sets a flag that its `while (!_stopRunning)` loop reads only when the loop next wakes,
    /// and queued work may still be on its way from one thread to the next. Here the threads stop
    /// in the direction work flows, each draining what it accepted before the next one stops:
    /// 1. the bridge thread: every registration and page it accepted runs, and hands its
    ///    components to the component thread;
    /// 2. the component thread: every layout runs, and queues its frames for the main thread;
    /// 3. the caller then runs the main loop until those frames are applied
    ///    (``WXMainThread/runUntilIdle(timeout:)``).
    ///
    /// After it, the singletons accept no work: ``WXSDKInstance/render(_:)`` reports
    /// ``WXRenderError/unloaded``. Idempotent; callable from any thread but the two SDK threads.
    public static func unload() {
        WXBridgeManager.jsThread.stop(pending: .drain)
        WXComponentManager.componentThread.stop(pending: .drain)
    }
}
