import LongThreads

/// The name Weex gives its layout thread (`WX_COMPONENT_THREAD_NAME`).
public let WX_COMPONENT_THREAD_NAME = "com.taobao.weex.component"

/// Weex's `WXComponentManager`: owns the component thread, where the component tree lives and
/// where the flexbox layout runs on each refresh (`_layoutAndSyncUI`), so that neither the
/// JavaScript thread nor the main thread pays for it. Results go to the main thread.
public enum WXComponentManager {
    /// `+[WXComponentManager componentThread]`: created once, on first use, from any thread.
    public static let componentThread: LongThread = WXThreadPriority.startSingleton(named: WX_COMPONENT_THREAD_NAME)

    /// Component thread: builds the component tree of `page`, lays it out in the instance's
    /// viewport, and queues the frames for the main thread.
    static func createBody(_ page: WXComponentData, for instance: WXSDKInstance) {
        precondition(componentThread.isCurrent, "BUG IN EXAMPLE: layout off \(WX_COMPONENT_THREAD_NAME)")
        instance.record(.layout)
        let root = WXComponent(page)
        let frames = WXLayout.layout(root.layoutNode, width: instance.viewportWidth, height: instance.viewportHeight)
        let types = root.typesByRef()
        let updates = frames.map { WXFrameUpdate(ref: $0.ref, type: types[$0.ref] ?? "?", frame: $0.frame) }
        WXPerformBlockOnMainThread {
            instance.applyLayout(updates)
        }
    }
}

/// Queues `block` on the component thread (Weex's `WXPerformBlockOnComponentThread`).
public func WXPerformBlockOnComponentThread(_ block: @escaping @Sendable () -> Void) throws(LongThreadError) {
    try WXComponentManager.componentThread.perform(block)
}

/// A node of the component tree. Made and used on the component thread only; not `Sendable`,
/// so the compiler keeps it there.
final class WXComponent {
    let ref: String
    let type: String
    let style: WXStyle
    let subcomponents: [WXComponent]

    init(_ data: WXComponentData) {
        ref = data.ref
        type = data.type
        style = data.style
        subcomponents = data.children.map(WXComponent.init)
    }

    /// The tree as the layout sees it (Weex's `flexCssNode`).
    var layoutNode: WXLayoutNode {
        WXLayoutNode(ref: ref, style: style, children: subcomponents.map(\.layoutNode))
    }

    func typesByRef() -> [String: String] {
        subcomponents.reduce(into: [ref: type]) { result, child in
            result.merge(child.typesByRef()) { first, _ in first }
        }
    }
}

/// One view's new frame, sent from the component thread to the main thread.
public struct WXFrameUpdate: Sendable, Equatable {
    public var ref: String
    public var type: String
    public var frame: WXFrame
}
