import Foundation
import LongThreads
import Testing

@Suite("Nesting depth: LongThread.nestingDepth")
struct NestingTests {
    @Test("0 in a task, 1 inside a nested run, 2 inside a run nested in that; 0 off the thread")
    func depths() throws {
        let thread = try LongThread(name: "lt-nesting")
        defer { thread.stop() }
        #expect(LongThread.nestingDepth == 0)
        let depths = try thread.sync { () -> [Int] in
            let seen = Recorder<Int>()
            seen.record(LongThread.nestingDepth)
            let inner = RunLoop.Mode("lt.nesting.inner")
            let innermost = RunLoop.Mode("lt.nesting.innermost")
            let innerDone = Latch()
            let outerDone = Latch()
            try! thread.perform(modes: [inner]) {
                seen.record(LongThread.nestingDepth)
                try! thread.perform(modes: [innermost]) {
                    seen.record(LongThread.nestingDepth)
                    innerDone.countDown()
                }
                _ = try! thread.runNested(in: innermost, until: .now + .seconds(10)) { !innerDone.isOpen }
                seen.record(LongThread.nestingDepth)
                outerDone.countDown()
            }
            _ = try thread.runNested(in: inner, until: .now + .seconds(10)) { !outerDone.isOpen }
            seen.record(LongThread.nestingDepth)
            return seen.events
        }
        #expect(depths == [0, 1, 2, 1, 0])
        #expect(try thread.sync { LongThread.nestingDepth } == 0)
    }
}
