import ExampleSupport
import Foundation
import LongThreads

/// Weex's `WXSDKInstance`: one page. Rendering it crosses the three threads Weex uses:
/// 1. bridge thread (`com.taobao.weex.bridge`): the page's "JavaScript" (here its JSON) is
///    parsed and checked against the registered components;
/// 2. component thread (`com.taobao.weex.component`): the component tree is built and laid out;
/// 3. main thread: the frames are applied to the "views" (here a table of frames), and
///    ``onCreateFinish`` or ``onFailed`` is called.
public final class WXSDKInstance: Sendable {
    /// The threads each step ran on, for readers and tests.
    public enum Phase: String, Sendable {
        case parse, layout, applyLayout
    }

    /// The viewport the root is laid out in, in points.
    public let viewportWidth: Double
    public let viewportHeight: Double

    /// Called on the main thread once every frame is applied.
    public let onCreateFinish: @Sendable ([WXFrameUpdate]) -> Void
    /// Called on the main thread when the page cannot be rendered.
    public let onFailed: @Sendable (WXRenderError) -> Void

    private struct State {
        var views: [String: WXFrame] = [:]
        var trace: [(phase: Phase, thread: String)] = []
        var finished = false
    }
    // MARK: Guarded by state (written on the three threads in turn, read by anyone)
    private let state = Protected(State())

    public init(
        viewportWidth: Double = 375, viewportHeight: Double = 667,
        onCreateFinish: @escaping @Sendable ([WXFrameUpdate]) -> Void = { _ in },
        onFailed: @escaping @Sendable (WXRenderError) -> Void = { _ in }
    ) {
        self.viewportWidth = viewportWidth
        self.viewportHeight = viewportHeight
        self.onCreateFinish = onCreateFinish
        self.onFailed = onFailed
    }

    /// Renders `page` (JSON: `{"type": "div", "ref": "…", "style": {…}, "children": […]}`).
    ///
    /// Returns at once; the result arrives on the main thread's run loop, which the caller must
    /// run (``WXMainThread/run(until:timeout:)``).
    /// - Callable from: any thread.
    public func render(_ page: String) {
        do {
            try WXPerformBlockOnBridgeThread { [self] in
                record(.parse)
                let body: WXComponentData
                do throws(WXRenderError) {
                    body = try WXBridgeManager.context.parsePage(page)
                } catch {
                    WXPerformBlockOnMainThread { self.fail(error) }
                    return
                }
                // Weex's callNative: the bridge hands the body to the component thread.
                do {
                    try WXPerformBlockOnComponentThread { WXComponentManager.createBody(body, for: self) }
                } catch {
                    WXPerformBlockOnMainThread { self.fail(.unloaded) }
                }
            }
        } catch {
            WXPerformBlockOnMainThread { self.fail(.unloaded) }
        }
    }

    /// The frames applied so far, by ref.
    public var views: [String: WXFrame] { state.withLock { $0.views } }

    /// True once ``onCreateFinish`` or ``onFailed`` was called.
    public var isFinished: Bool { state.withLock { $0.finished } }

    /// Which thread ran each step of the last render, in order.
    public var trace: [(phase: Phase, thread: String)] { state.withLock { $0.trace } }

    func record(_ phase: Phase) {
        let thread = LongThread.current?.name ?? (WXMainThread.isCurrent ? "main" : "?")
        state.withLock { $0.trace.append((phase, thread)) }
    }

    /// Main thread: applies the frames, then reports.
    func applyLayout(_ updates: [WXFrameUpdate]) {
        precondition(WXMainThread.isCurrent, "BUG IN EXAMPLE: UI updated off the main thread")
        record(.applyLayout)
        state.withLock { state in
            for update in updates { state.views[update.ref] = update.frame }
            state.finished = true
        }
        onCreateFinish(updates)
    }

    /// Main thread: reports a failure.
    func fail(_ error: WXRenderError) {
        state.withLock { $0.finished = true }
        onFailed(error)
    }
}
