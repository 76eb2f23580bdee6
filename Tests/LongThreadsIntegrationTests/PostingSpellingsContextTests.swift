import Foundation
import LongThreads
import LongThreadsTracing
import LongThreadsTestSupport
import Testing
import Tracing

/// A request id carried in the `ServiceContext`, as a server would set one per request.
private enum SpellingRequestID: ServiceContextKey {
    typealias Value = String
}

/// What a test posts: it records the request id it sees on the thread.
typealias Probe = @Sendable () -> Void

/// Every public way to post work on a LongThread, by its signature: each must carry the poster's
/// context to the work. `everySpellingIsListed` reads the library's sources, so a spelling added
/// without an entry here fails that test.
enum PostingSpelling {
    /// Spellings that may block their caller (not callable from async code).
    static let blocking: [(key: String, post: @Sendable (LongThread, @escaping Probe) throws -> Void)] = [
        ("perform(modes:label:_:)", { thread, probe in try thread.perform(modes: [.default], probe) }),
        ("perform(label:_:)", { thread, probe in try thread.perform(probe) }),
        ("perform(waitUntilDone:modes:label:_:)", { thread, probe in try thread.perform(waitUntilDone: true, modes: [.default], probe) }),
        ("perform(waitUntilDone:label:_:)", { thread, probe in try thread.perform(waitUntilDone: true, probe) }),
        ("perform(onThread:modes:label:_:)", { thread, probe in try perform(onThread: thread, probe) }),
        ("perform(onThread:waitUntilDone:modes:label:_:)", { thread, probe in try perform(onThread: thread, waitUntilDone: true, probe) }),
        ("sync(modes:label:_:)", { thread, probe in try thread.sync(modes: [.default]) { probe() } }),
        ("sync(label:_:)", { thread, probe in try thread.sync { probe() } }),
        ("sync(timeout:modes:label:group:_:)", { thread, probe in try thread.sync(timeout: .seconds(10)) { probe() } }),
        ("perform(waitUntilDone:timeout:modes:label:group:_:)", { thread, probe in
            try thread.perform(waitUntilDone: true, timeout: .seconds(10), probe)
        }),
        ("submit(modes:label:group:_:)", { thread, probe in try thread.submit(probe) }),
        ("performAtFrontOfQueue(label:_:)", { thread, probe in try thread.performAtFrontOfQueue(probe) }),
        ("perform(at:modes:label:group:_:)", { thread, probe in try thread.perform(at: .now + .milliseconds(1), probe) }),
        ("perform(after:modes:label:group:_:)", { thread, probe in try thread.perform(after: .milliseconds(1), probe) }),
        ("schedule(every:initialDelay:tolerance:modes:_:)", { thread, probe in
            try thread.schedule(every: .milliseconds(1)) { timer in
                timer.cancel()
                probe()
            }
        }),
    ]

    /// Spellings that await the work.
    static let awaiting: [(key: String, post: @Sendable (LongThread, @escaping Probe) async throws -> Void)] = [
        ("run(modes:label:_:)", { thread, probe in try await thread.run(modes: [.default]) { probe() } }),
        ("run(label:_:)", { thread, probe in try await thread.run { probe() } }),
        ("run(at:modes:_:)", { thread, probe in try await thread.run(at: .now + .milliseconds(1)) { probe() } }),
        ("run(after:modes:_:)", { thread, probe in try await thread.run(after: .milliseconds(1)) { probe() } }),
    ]

    /// Public functions that take a callback but post nothing: an observer's callback runs on
    /// the loop's activities, in no poster's context (`ContextPropagator`'s documentation).
    static let notPosts: Set<String> = ["addObserver(for:order:modes:_:)"]

    /// The public functions of LongThreads that take work (a parameter named `work` or `callback`),
    /// as `name(label:label:)`, read from the sources.
    static func declared() throws -> Set<String> {
        let sources = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/LongThreads")
        let files = try FileManager.default.subpathsOfDirectory(atPath: sources.path).filter { $0.hasSuffix(".swift") }
        var keys = Set<String>()
        for file in files {
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            keys.formUnion(declarations(in: text))
        }
        return keys.subtracting(notPosts)
    }

    private static func declarations(in text: String) -> [String] {
        var keys: [String] = []
        var rest = Substring(text)
        while let range = rest.range(of: "public func ") {
            rest = rest[range.upperBound...]
            let name = String(rest.prefix { $0.isLetter || $0.isNumber || $0 == "_" })
            guard let open = rest.firstIndex(of: "(") else { break }
            var depth = 0
            var parameters: [String] = []
            var current = ""
            var index = open
            var previous: Character = " "
            scan: while index < rest.endIndex {
                let character = rest[index]
                defer { previous = character }
                switch character {
                case "(", "[", "<": depth += 1; if depth > 1 { current.append(character) }
                case ">" where previous == "-": current.append(character) // an arrow, not a bracket
                case ")", "]", ">":
                    depth -= 1
                    if depth == 0 { parameters.append(current); break scan }
                    current.append(character)
                case "," where depth == 1: parameters.append(current); current = ""
                default: current.append(character)
                }
                index = rest.index(after: index)
            }
            let names = parameters.compactMap { parameter -> (label: String, name: String)? in
                let head = parameter.split(separator: ":", maxSplits: 1).first.map(String.init) ?? ""
                let words = head.split(whereSeparator: \.isWhitespace).map(String.init)
                guard let last = words.last else { return nil }
                return (words.count > 1 ? words[words.count - 2] : last, last)
            }
            guard names.contains(where: { $0.name == "work" || $0.name == "callback" }) else { continue }
            keys.append("\(name)(\(names.map { "\($0.label):" }.joined()))")
        }
        return keys
    }
}

/// The propagator is process-wide: one test at a time, with the plain ServiceContext propagator.
@Suite("Context on every way to post", .serialized)
struct PostingSpellingsContextTests {
    init() { ServiceContextPropagator.bootstrap() }

    private func context(_ id: String) -> ServiceContext {
        var context = ServiceContext.topLevel
        context[SpellingRequestID.self] = id
        return context
    }

    @Test("every public posting spelling is in the table of this suite")
    func everySpellingIsListed() throws {
        let listed = Set(PostingSpelling.blocking.map(\.key) + PostingSpelling.awaiting.map(\.key))
        let declared = try PostingSpelling.declared()
        #expect(declared.count >= 15, "the scan found \(declared.sorted())")
        #expect(declared.subtracting(listed).sorted() == [], "spellings without a context test")
        #expect(listed.subtracting(declared).sorted() == [], "listed spellings that no longer exist")
    }

    @Test("the poster's context reaches the work", arguments: PostingSpelling.blocking.indices)
    func blockingSpelling(_ index: Int) throws {
        let (key, post) = PostingSpelling.blocking[index]
        let thread = try LongThread(name: "lt-ctx-spelling")
        defer { thread.stop() }
        let seen = Recorder<String>()
        let ran = Latch()
        try ServiceContext.withValue(context(key)) {
            try post(thread) {
                seen.record(ServiceContext.current?[SpellingRequestID.self] ?? "none")
                ran.countDown()
            }
        }
        #expect(ran.wait())
        #expect(seen.events.first == key)
    }

    @Test("the poster's context reaches awaited work", arguments: PostingSpelling.awaiting.indices)
    func awaitingSpelling(_ index: Int) async throws {
        let (key, post) = PostingSpelling.awaiting[index]
        let thread = try LongThread(name: "lt-ctx-spelling")
        defer { thread.stopAtTestEnd() }
        let seen = Recorder<String>()
        try await ServiceContext.withValue(context(key)) {
            try await post(thread) { seen.record(ServiceContext.current?[SpellingRequestID.self] ?? "none") }
        }
        #expect(seen.events.first == key)
    }
}
