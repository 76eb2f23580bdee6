// A small flexbox, the part of Weex's layout (Yoga / css-layout) the component thread runs on
// every refresh: row and column containers, fixed sizes, flex-grow, padding, stretch on the cross
// axis. Pure values: no threads here, so it is tested as plain functions.

/// The main axis of a container.
public enum WXFlexDirection: String, Sendable, Equatable {
    /// Children are laid out left to right.
    case row
    /// Children are laid out top to bottom (the default, as in Weex).
    case column
}

/// Padding on the four sides of a box, in points.
public struct WXPadding: Sendable, Equatable {
    public var top: Double
    public var right: Double
    public var bottom: Double
    public var left: Double

    /// The same padding on every side, or nothing.
    public init(_ all: Double = 0) {
        self.init(top: all, right: all, bottom: all, left: all)
    }

    public init(top: Double, right: Double, bottom: Double, left: Double) {
        self.top = top
        self.right = right
        self.bottom = bottom
        self.left = left
    }
}

/// The style properties this layout understands, a subset of Weex's CSS.
///
/// Unlike CSS, and like Weex (Yoga with `flexShrink` 0), children never shrink: when fixed sizes
/// overflow a container, they overflow.
public struct WXStyle: Sendable, Equatable {
    public var flexDirection: WXFlexDirection
    /// A fixed width; nil takes the content's (or, on the cross axis, stretches).
    public var width: Double?
    /// A fixed height; nil takes the content's (or, on the cross axis, stretches).
    public var height: Double?
    /// The share of a container's free main-axis space this child takes (`flex: 1` in Weex).
    public var flexGrow: Double
    public var padding: WXPadding

    public init(
        flexDirection: WXFlexDirection = .column, width: Double? = nil, height: Double? = nil,
        flexGrow: Double = 0, padding: WXPadding = .init()
    ) {
        self.flexDirection = flexDirection
        self.width = width
        self.height = height
        self.flexGrow = flexGrow
        self.padding = padding
    }
}

/// A computed box, relative to the root's top-left corner.
public struct WXFrame: Sendable, Equatable, CustomStringConvertible {
    public var x: Double
    public var y: Double
    public var width: Double
    public var height: Double

    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    public var description: String {
        func f(_ v: Double) -> String { v == v.rounded() ? String(Int(v)) : String(v) }
        return "(\(f(x)), \(f(y)), \(f(width))x\(f(height)))"
    }
}

/// A node to lay out: a style and children. Weex's `WXComponent` holds one of these
/// (its `flexCssNode`); the layout itself knows nothing of components.
public struct WXLayoutNode: Sendable, Equatable {
    public var ref: String
    public var style: WXStyle
    public var children: [WXLayoutNode]

    public init(ref: String, style: WXStyle = .init(), children: [WXLayoutNode] = []) {
        self.ref = ref
        self.style = style
        self.children = children
    }
}

/// The flexbox computation.
public enum WXLayout {
    /// Lays out `root` in a viewport of `width` x `height` and returns every node's frame, by ref,
    /// in tree order (parents before children).
    ///
    /// The root takes its fixed size if it has one, else the viewport's.
    public static func layout(_ root: WXLayoutNode, width: Double, height: Double) -> [(ref: String, frame: WXFrame)] {
        var frames: [(ref: String, frame: WXFrame)] = []
        let frame = WXFrame(x: 0, y: 0, width: root.style.width ?? width, height: root.style.height ?? height)
        place(root, in: frame, into: &frames)
        return frames
    }

    /// The size `node` wants along the horizontal (`row`) or vertical (`column`) axis: its fixed
    /// size, or its padding plus its children's (summed along its own direction, the largest across).
    static func intrinsicSize(of node: WXLayoutNode, along axis: WXFlexDirection) -> Double {
        if let fixed = axis == .row ? node.style.width : node.style.height { return fixed }
        let padding = node.style.padding
        let paddingSum = axis == .row ? padding.left + padding.right : padding.top + padding.bottom
        let childSizes = node.children.map { intrinsicSize(of: $0, along: axis) }
        let content = node.style.flexDirection == axis ? childSizes.reduce(0, +) : (childSizes.max() ?? 0)
        return paddingSum + content
    }

    /// Gives `node` the box `frame`, then sizes and places its children inside its padding.
    private static func place(_ node: WXLayoutNode, in frame: WXFrame, into frames: inout [(ref: String, frame: WXFrame)]) {
        frames.append((node.ref, frame))
        guard !node.children.isEmpty else { return }
        let style = node.style
        let isRow = style.flexDirection == .row
        let innerX = frame.x + style.padding.left
        let innerY = frame.y + style.padding.top
        let innerWidth = max(0, frame.width - style.padding.left - style.padding.right)
        let innerHeight = max(0, frame.height - style.padding.top - style.padding.bottom)
        let innerMain = isRow ? innerWidth : innerHeight
        let innerCross = isRow ? innerHeight : innerWidth

        // Flex basis: the fixed or content size along the main axis; free space goes to flex-grow.
        let bases = node.children.map { intrinsicSize(of: $0, along: style.flexDirection) }
        let totalGrow = node.children.reduce(0) { $0 + max(0, $1.style.flexGrow) }
        let free = innerMain - bases.reduce(0, +)

        var offset = 0.0
        for (child, basis) in zip(node.children, bases) {
            var main = basis
            if free > 0, totalGrow > 0 { main += free * max(0, child.style.flexGrow) / totalGrow }
            // Cross axis: a fixed size wins, otherwise stretch (align-items: stretch, the default).
            let fixedCross = isRow ? child.style.height : child.style.width
            let cross = fixedCross ?? innerCross
            let childFrame = isRow
                ? WXFrame(x: innerX + offset, y: innerY, width: main, height: cross)
                : WXFrame(x: innerX, y: innerY + offset, width: cross, height: main)
            place(child, in: childFrame, into: &frames)
            offset += main
        }
    }
}
