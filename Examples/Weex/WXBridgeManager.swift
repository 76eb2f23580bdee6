import Foundation
import LongThreads

/// The name Weex gives its JavaScript thread (`WX_BRIDGE_THREAD_NAME`).
public let WX_BRIDGE_THREAD_NAME = "com.taobao.weex.bridge"

/// Weex's `WXBridgeManager`: owns the JavaScript ("bridge") thread. In Weex, JavaScript runs
/// there, module and component registration is sent there, and the calls JavaScript makes back
/// into native code (`callNative`: create body, add element) leave from there for the component
/// thread.
///
/// Here the "JavaScript" is the page's JSON, parsed and checked against the registry on this
/// thread: everything the registry holds is touched on this thread only, so it needs no lock.
public enum WXBridgeManager {
    /// `+[WXBridgeManager jsThread]`: created once, on first use, from any thread.
    ///
    /// Weex guards the creation with `dispatch_once`; a `static let` is Swift's equivalent (its
    /// initializer runs once, under a lock, whichever threads race to touch it first). The thread
    /// keeps its run loop alive on a port source and runs until ``WXSDKEngine/unload()``, like
    /// Weex's `while (!_stopRunning)` loop around `runMode:beforeDate:`.
    public static let jsThread: LongThread = WXThreadPriority.startSingleton(named: WX_BRIDGE_THREAD_NAME)

    /// The registry, bridge thread only.
    static let context = WXBridgeContext()
}

/// Queues `block` on the bridge thread (Weex's `WXPerformBlockOnBridgeThread`).
///
/// - Throws: ``LongThreadError/stopped`` after ``WXSDKEngine/unload()``: where Weex would queue
///   work on a thread that no longer runs its loop, the caller is told.
public func WXPerformBlockOnBridgeThread(_ block: @escaping @Sendable () -> Void) throws(LongThreadError) {
    try WXBridgeManager.jsThread.perform(block)
}

/// What the JavaScript side knows: registered modules and components.
///
/// `@unchecked Sendable` because it is confined, not locked: every access happens on
/// ``WXBridgeManager/jsThread`` (each accessor checks it), the way Weex keeps its JS-side state.
final class WXBridgeContext: @unchecked Sendable {
    // MARK: Bridge thread only
    private var modules: [String: [String]] = [:]
    private var components: Set<String> = []

    private func assertOnBridgeThread() {
        precondition(WXBridgeManager.jsThread.isCurrent, "BUG IN EXAMPLE: bridge state touched off \(WX_BRIDGE_THREAD_NAME)")
    }

    func registerModule(_ name: String, methods: [String]) {
        assertOnBridgeThread()
        modules[name] = methods
    }

    func registerComponent(_ name: String) {
        assertOnBridgeThread()
        components.insert(name)
    }

    var registeredModules: [String: [String]] {
        assertOnBridgeThread()
        return modules
    }

    var registeredComponents: Set<String> {
        assertOnBridgeThread()
        return components
    }

    /// Turns the page's JSON (what Weex's JS framework sends as `createBody` plus `addElement`
    /// calls) into a component description, checking each type against the registry.
    func parsePage(_ json: String) throws(WXRenderError) -> WXComponentData {
        assertOnBridgeThread()
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: Data(json.utf8))
        } catch {
            throw .invalidTemplate("not JSON: \(error.localizedDescription)")
        }
        return try parseElement(object, path: "body")
    }

    private func parseElement(_ object: Any, path: String) throws(WXRenderError) -> WXComponentData {
        guard let element = object as? [String: Any] else { throw .invalidTemplate("\(path) is not an object") }
        guard let type = element["type"] as? String else { throw .invalidTemplate("\(path) has no type") }
        guard components.contains(type) else { throw .unknownComponent(type) }
        let ref = element["ref"] as? String ?? path
        let style = try WXStyle(json: element["style"] as? [String: Any] ?? [:], ref: ref)
        var children: [WXComponentData] = []
        for (index, child) in (element["children"] as? [Any] ?? []).enumerated() {
            children.append(try parseElement(child, path: "\(ref).\(index)"))
        }
        return WXComponentData(ref: ref, type: type, style: style, children: children)
    }
}

/// A component as the bridge describes it to the component thread: plain values, safe to send.
public struct WXComponentData: Sendable, Equatable {
    public var ref: String
    public var type: String
    public var style: WXStyle
    public var children: [WXComponentData]
}

/// Why a page could not be rendered.
public enum WXRenderError: Error, Equatable, Sendable {
    /// The page's JSON is malformed.
    case invalidTemplate(String)
    /// The page uses a component type nobody registered.
    case unknownComponent(String)
    /// A style property has a value the layout does not understand.
    case invalidStyle(ref: String, property: String)
    /// The SDK was unloaded: its threads accept no more work.
    case unloaded
}

extension WXStyle {
    /// Reads Weex's CSS subset: `flexDirection`, `width`, `height`, `flex`, `padding`,
    /// `paddingTop/Right/Bottom/Left`.
    init(json: [String: Any], ref: String) throws(WXRenderError) {
        self.init()
        func number(_ key: String) throws(WXRenderError) -> Double? {
            guard let value = json[key] else { return nil }
            // `is Bool` would also match an NSNumber holding 1, so compare the dynamic type.
            guard type(of: value) != Bool.self, let number = value as? NSNumber else {
                throw .invalidStyle(ref: ref, property: key)
            }
            return number.doubleValue
        }
        if let direction = json["flexDirection"] {
            guard let name = direction as? String, let parsed = WXFlexDirection(rawValue: name) else {
                throw .invalidStyle(ref: ref, property: "flexDirection")
            }
            flexDirection = parsed
        }
        width = try number("width")
        height = try number("height")
        flexGrow = try number("flex") ?? 0
        if let all = try number("padding") { padding = WXPadding(all) }
        if let top = try number("paddingTop") { padding.top = top }
        if let right = try number("paddingRight") { padding.right = right }
        if let bottom = try number("paddingBottom") { padding.bottom = bottom }
        if let left = try number("paddingLeft") { padding.left = left }
    }
}
