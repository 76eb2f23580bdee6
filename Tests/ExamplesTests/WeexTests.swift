import ExampleSupport
import Foundation
import LongThreads
import Testing
@testable import WeexExample

@Suite struct WeexLayoutTests {
    @Test("a column gives free space to flex-grow children and stretches them across, inside padding")
    func columnWithGrowAndPadding() {
        let root = WXLayoutNode(ref: "root", style: .init(padding: .init(10)), children: [
            .init(ref: "a", style: .init(height: 100)),
            .init(ref: "b", style: .init(flexGrow: 1)),
            .init(ref: "c", style: .init(width: 40, flexGrow: 3)),
        ])
        let frames = Dictionary(uniqueKeysWithValues: WXLayout.layout(root, width: 200, height: 500).map { ($0.ref, $0.frame) })
        #expect(frames["root"] == WXFrame(x: 0, y: 0, width: 200, height: 500))
        #expect(frames["a"] == WXFrame(x: 10, y: 10, width: 180, height: 100))
        // 480 - 100 = 380 free, split 1:3.
        #expect(frames["b"] == WXFrame(x: 10, y: 110, width: 180, height: 95))
        #expect(frames["c"] == WXFrame(x: 10, y: 205, width: 40, height: 285))
    }

    @Test("a row without a fixed size takes its children's width and its tallest child's height")
    func intrinsicSizes() {
        let row = WXLayoutNode(ref: "row", style: .init(flexDirection: .row, padding: .init(top: 1, right: 2, bottom: 3, left: 4)), children: [
            .init(ref: "x", style: .init(width: 30, height: 10)),
            .init(ref: "y", style: .init(width: 20, height: 50)),
        ])
        #expect(WXLayout.intrinsicSize(of: row, along: .row) == 56)
        #expect(WXLayout.intrinsicSize(of: row, along: .column) == 54)
        let frames = Dictionary(uniqueKeysWithValues: WXLayout.layout(
            WXLayoutNode(ref: "root", children: [row]), width: 100, height: 100).map { ($0.ref, $0.frame) })
        #expect(frames["row"] == WXFrame(x: 0, y: 0, width: 100, height: 54))
        #expect(frames["x"] == WXFrame(x: 4, y: 1, width: 30, height: 10))
        #expect(frames["y"] == WXFrame(x: 34, y: 1, width: 20, height: 50))
    }

    @Test("children never shrink: fixed sizes that overflow a container overflow it")
    func noShrink() {
        let root = WXLayoutNode(ref: "r", style: .init(flexDirection: .row), children: [
            .init(ref: "a", style: .init(width: 80)), .init(ref: "b", style: .init(width: 80, flexGrow: 1)),
        ])
        let frames = WXLayout.layout(root, width: 100, height: 10)
        #expect(frames.map(\.frame.width) == [100, 80, 80])
    }
}

/// The SDK threads are process-wide singletons that `unload()` stops for good, so the whole
/// scenario is one test. It runs on the main actor, which on Linux is the main thread: the
/// example runs the main thread's run loop while it waits for results.
@Suite struct WeexEndToEndTests {
    @Test("registration on the bridge thread, layout on the component thread, results on the main loop, unload loses nothing")
    @MainActor
    func endToEnd() throws {
        let lines = Protected<[String]>([])
        let report = try WeexExample.run(log: { line in lines.withLock { $0.append(line) } })

        #expect(report.trace.map(\.phase) == [.parse, .layout, .applyLayout])
        #expect(report.trace.map(\.thread) == ["com.taobao.weex.bridge", "com.taobao.weex.component", "main"])
        #expect(WXBridgeManager.jsThread.name == "com.taobao.weex.bridge")
        #expect(WXComponentManager.componentThread.name == "com.taobao.weex.component")

        let v = report.views
        #expect(v["root"] == WXFrame(x: 0, y: 0, width: 375, height: 667))
        #expect(v["header"] == WXFrame(x: 10, y: 10, width: 355, height: 60))
        #expect(v["logo"] == WXFrame(x: 15, y: 15, width: 50, height: 50))
        #expect(v["title"] == WXFrame(x: 65, y: 15, width: 295, height: 50))
        #expect(v["content"] == WXFrame(x: 10, y: 70, width: 355, height: 537))
        #expect(v["footer"] == WXFrame(x: 10, y: 607, width: 355, height: 50))
        #expect(v["back"] == WXFrame(x: 10, y: 607, width: 55, height: 50))
        #expect(v["tab1"] == WXFrame(x: 65, y: 607, width: 100, height: 50))
        #expect(v["tab2"] == WXFrame(x: 165, y: 607, width: 200, height: 50))

        #expect(report.badPageError == .unknownComponent("video"))
        #expect(report.afterUnloadError == .unloaded)
        #expect(report.bridgeNice == report.mainNice)
        #expect(report.componentNice == report.mainNice)
        #expect(report.threadsStopped)
        #expect(lines.withLock { $0.count } > 5)
    }
}
