import Foundation
import LongThreads
import Testing

/// `Task(executorPreference:)` and its siblings *own* their preference: the runtime retains the
/// executor passed and, when the task completes, releases the object its `asUnownedTaskExecutor()`
/// names. Both must be the same object, or every such task leaks one and over-releases the other.
/// These run in child processes: an over-release crashes the process.
@Suite("Task executor preference owned by a task")
struct TaskPreferenceTests {
    @Test("Task(executorPreference:), Task.detached and addTask(executorPreference:) run on the thread, many times")
    func ownedPreferenceRunsOnThread() async {
        await #expect(processExitsWith: .success) {
            let thread = try! LongThread(name: "lt-owned-pref")
            for _ in 0..<50 {
                let attached = await Task(executorPreference: thread) { LongThread.current === thread }.value
                let detached = await Task.detached(executorPreference: thread) { LongThread.current === thread }.value
                let children = await withTaskGroup(of: Bool.self) { group in
                    for _ in 0..<4 { group.addTask(executorPreference: thread) { LongThread.current === thread } }
                    return await group.reduce(true) { $0 && $1 }
                }
                if !(attached && detached && children) { exit(1) }
            }
            await thread.stop()
            if await !thread.waitUntilExit() { exit(2) }
        }
    }

    @Test("a thread its caller drops right after starting the task serves the task, then ends")
    func droppedThreadServesTaskThenEnds() async {
        await #expect(processExitsWith: .success) {
            for round in 0..<20 {
                let name = "lt-dropped-\(round)"
                weak var weakThread: LongThread?
                let task: Task<String?, Never>
                do {
                    let thread = try! LongThread(name: name)
                    weakThread = thread
                    task = Task(executorPreference: thread) {
                        await Task.yield()
                        return LongThread.current?.name
                    }
                }
                // The task alone keeps the thread alive until it completes.
                if await task.value != name { exit(1) }
                let deadline = ContinuousClock.now + .seconds(10)
                while weakThread != nil {
                    if ContinuousClock.now > deadline { exit(2) }
                    try? await Task.sleep(for: .milliseconds(1))
                }
            }
        }
    }
}
