import CLongThreadsShims
import Glibc
@_spi(Internal) @_spi(MemoryReaders) import Runtime // Backtrace from captured addresses (pinned toolchain: 6.3)

/// The Swift runtime's demangler (exported by libswiftCore): a malloc'd string, or nil when `name`
/// is not a Swift symbol.
@_silgen_name("swift_demangle")
private func swiftDemangle(
    _ mangledName: UnsafePointer<CChar>?, _ mangledNameLength: UInt, _ outputBuffer: UnsafeMutablePointer<CChar>?,
    _ outputBufferSize: UnsafeMutablePointer<UInt>?, _ flags: UInt32
) -> UnsafeMutablePointer<CChar>?

extension StallMonitor {
    /// One frame of a stalled thread's stack, innermost first.
    public struct Frame: Sendable, Hashable, CustomStringConvertible {
        /// The instruction address: the interrupted one for the first frame, a return address
        /// for the others.
        public var address: UInt
        /// The function's name, Swift names demangled: from the image's `.symtab`, else from its
        /// `.dynsym` (a stripped library's exported functions). Nil when neither names the
        /// address (a `static` function of a stripped library, code outside any image); then
        /// ``offset`` counts from the image's load address.
        public var symbol: String?
        /// The file name of the executable or shared library the address is in; nil outside any.
        public var image: String?
        /// How far into ``symbol`` the address is; with no symbol, the address in the image as its
        /// file numbers it (its virtual address, the one `addr2line -e <image>` takes), or 0
        /// outside any image.
        public var offset: UInt
        /// Whether the frame belongs to LongThreads or to the run loop under it (CoreFoundation,
        /// Foundation's run loop), rather than to the work that stalled.
        public var isLibrary: Bool

        /// `symbol + offset (image)` with the offset in decimal, or, when nothing names the
        /// address, `0x<address> (image + 0x<offset>)` (`0x<address> (?)` outside any image);
        /// ` [LongThreads]` follows the library's frames.
        public var description: String {
            let marker = isLibrary ? " [LongThreads]" : ""
            if let symbol { return "\(symbol) + \(offset) (\(image ?? "?"))\(marker)" }
            let place = image.map { "\($0) + 0x\(String(offset, radix: 16))" } ?? "?"
            return "0x\(String(address, radix: 16)) (\(place))\(marker)"
        }
    }
}

/// Captures a stalled thread's stack from the monitor's thread, with a signal to that thread only
/// (`stack_capture.c` has the handler and its protocol), and names its frames.
///
/// Never interrupting a thread that is not stalled: the monitor raises the thread's
/// `stackSampleRequested` flag, then checks that the same callout still runs, and only then
/// signals. A loop thread that ends that callout meanwhile sees the flag at its next callout
/// boundary (`ThreadCore.publishCalloutStart`: a sequentially consistent store, then load, against
/// the monitor's store, then load) and waits there until the capture is over: the signal lands in
/// the library's own wait, never in the next callout, and the report says the callout ended.
enum StackSampler {
    /// Why a report has no stack.
    enum Failure: Error {
        case disabled
        case ended
        case signalTaken(errno: Int32)
        case timedOut
        case failed(errno: Int32)

        var note: String {
            switch self {
            case .disabled: "stack capture is off"
            case .ended: "the callout ended while its stack was being captured"
            case .signalTaken(let errno):
                "stack capture unavailable: signal \(CLongThreadsShims_stackCaptureSignal()) is taken (errno \(errno))"
            case .timedOut: "the thread did not answer the stack capture signal in time (it blocks the signal)"
            case .failed(let errno): "stack capture failed (errno \(errno))"
            }
        }
    }

    /// The most frames kept.
    static let capacity = 128
    /// How long a capture waits for the thread's handler. A thread that blocks the signal makes
    /// the monitor, and the thread itself if it reaches a callout boundary meanwhile, wait this long.
    static let timeoutNanoseconds: Int64 = 100_000_000

    /// One capture at a time in the process (the C side has one request slot), and the install.
    private static let state = Locked<(installed: Int32?, buffer: UnsafeMutablePointer<UInt>)>(
        (nil, .allocate(capacity: capacity))
    )
    /// Symbol lookups, by address: a stall repeats the same frames.
    private static let names = Locked<[UInt: [StallMonitor.Frame]]>([:])

    /// Monitor's thread: the stack of `core`'s loop thread, if the callout that began at `start`
    /// (a timed one) still runs.
    static func capture(_ core: ThreadCore, start: UInt64) -> Result<[StallMonitor.Frame], Failure> {
        let addresses = state.withLock { state -> Result<[UInt], Failure> in
            if state.installed == nil { state.installed = CLongThreadsShims_stackCaptureInstall() }
            if let error = state.installed, error != 0 { return .failure(.signalTaken(errno: error)) }
            let tid = core.watch.kernelThreadID.load(ordering: .relaxed)
            guard tid != 0 else { return .failure(.ended) }
            core.watch.stackSampleRequested.store(true, ordering: .sequentiallyConsistent)
            defer { core.watch.stackSampleRequested.store(false, ordering: .sequentiallyConsistent) }
            guard core.watch.calloutStartedAt.load(ordering: .sequentiallyConsistent) == start else { return .failure(.ended) }
            let count = CLongThreadsShims_stackCapture(tid, timeoutNanoseconds, state.buffer, Int32(capacity))
            if count == -ETIMEDOUT { return .failure(.timedOut) }
            if count < 0 { return .failure(.failed(errno: -count)) }
            // The loop waits at its next boundary while the flag is up: a changed start means the
            // signal found it there, not in the stalled callout.
            guard core.watch.calloutStartedAt.load(ordering: .sequentiallyConsistent) == start else { return .failure(.ended) }
            return .success(Array(UnsafeBufferPointer(start: state.buffer, count: Int(count))))
        }
        return addresses.map(symbolicate)
    }

    /// Names each address, marks the library's frames, and trims the loop's frames below the
    /// work's outermost frame, so the stack reads from where the thread is to the work's entry.
    static func symbolicate(_ addresses: [UInt]) -> [StallMonitor.Frame] {
        let cached = names.withLock { cache in addresses.map { cache[$0] } }
        let unknown = addresses.indices.filter { cached[$0] == nil }.map { (index: $0, address: addresses[$0]) }
        // It reads /proc/self/maps and the images' files: opened under the headroom's lock.
        if !unknown.isEmpty { DescriptorHeadroom.excludingCF { name(unknown) } }
        var frames = names.withLock { cache in addresses.flatMap { cache[$0] ?? [] } }
        // Under a sanitizer the handler runs later, from the sanitizer's own frames, which
        // backtrace(3) then reports above the interrupted code: drop them, keep the first frame.
        if let lastMachinery = frames.indices.dropFirst().prefix(while: { isCaptureMachinery(frames[$0]) }).last {
            frames.removeSubrange(1...lastMachinery)
        }
        if let lastWorkFrame = frames.lastIndex(where: isWork) {
            frames.removeSubrange((lastWorkFrame + 1)...)
        }
        return frames
    }

    /// Names `addresses` with the toolchain's symbolicator (ELF symbol tables: private functions
    /// too), then, for what it leaves unnamed, from the image's own `.symtab` or `.dynsym`
    /// (`ElfSymbols`), and caches the frames of each.
    private static func name(_ addresses: [(index: Int, address: UInt)]) {
        // The first captured address is the interrupted instruction; the others return addresses
        // (the symbolicator looks one byte back for those).
        let richFrames = addresses.map { entry -> RichFrame<UInt64> in
            entry.index == 0 ? .programCounter(UInt64(entry.address)) : .returnAddress(UInt64(entry.address))
        }
        let images = imageMap(covering: addresses.map(\.address))
        let backtrace = Backtrace(architecture: architecture, frames: richFrames, images: images)
        var named: [UInt: [StallMonitor.Frame]] = [:]
        // Symbol tables only: reading DWARF for inlined frames and source lines took seconds per
        // report in a large (sanitizer) binary.
        if let symbolicated = backtrace.symbolicated(with: images, options: [.useSymbolCache]) {
            for frame in symbolicated.frames {
                let pc = frame.captured.originalProgramCounter
                guard let address = UInt64(pc).map(UInt.init), addresses.contains(where: { $0.address == address }),
                      let symbol = frame.symbol, !symbol.rawName.isEmpty, symbol.rawName != "<unknown>" else { continue }
                named[address, default: []].append(StallMonitor.Frame(
                    address: address,
                    symbol: symbol.name,
                    image: symbol.imageName,
                    offset: UInt(max(symbol.offset, 0)),
                    isLibrary: isLibrarySymbol(raw: symbol.rawName, name: symbol.name)
                ))
            }
        }
        // Image files are opened here, under `excludingCF` (see `symbolicate`).
        let openImage: (String) -> Int32 = { open($0, O_RDONLY | O_CLOEXEC) }
        for entry in addresses where named[entry.address] == nil {
            named[entry.address] = [nameFromImage(entry.address, isReturnAddress: entry.index != 0, images: images, opening: openImage)]
        }
        names.withLock { cache in
            if cache.count > 4_096 { cache.removeAll() }
            for entry in addresses { cache[entry.address] = named[entry.address] }
        }
    }

    /// A frame the symbolicator left unnamed, named from its image's `.symtab`, else `.dynsym`
    /// (a stripped library's exported functions); else its address and offset in the image.
    private static func nameFromImage(
        _ address: UInt, isReturnAddress: Bool, images: ImageMap, opening: (String) -> Int32
    ) -> StallMonitor.Frame {
        var frame = StallMonitor.Frame(address: address, symbol: nil, image: nil, offset: 0, isLibrary: false)
        guard let index = images.indexOfImage(at: Backtrace.Address(UInt64(address))) else { return frame }
        let image = images[index]
        frame.image = image.name
        guard let path = image.path, let base = UInt64(image.baseAddress).map(UInt.init) else { return frame }
        let symbols = ElfSymbols.of(path: path, opening: opening)
        // The map's base is where the lowest loadable segment landed.
        let loadBias = base &- (symbols?.lowestLoadAddress ?? 0)
        let inImage = address &- loadBias
        frame.offset = inImage
        // A return address may be just past its function's end (a call to a function that does
        // not return): look one byte back, and count the offset from the address itself.
        if let symbols, let (symbol, _) = symbols.symbol(at: isReturnAddress && inImage > 0 ? inImage - 1 : inImage) {
            frame.symbol = demangled(symbol.name)
            frame.offset = inImage - symbol.value
            frame.isLibrary = isLibrarySymbol(raw: symbol.name, name: frame.symbol ?? symbol.name)
        }
        return frame
    }

    /// `name` demangled by the Swift runtime when it is a Swift symbol; as it is otherwise.
    static func demangled(_ name: String) -> String {
        guard name.hasPrefix("$s") || name.hasPrefix("_$s") || name.hasPrefix("$S") else { return name }
        guard let text = name.withCString({ swiftDemangle($0, UInt(strlen($0)), nil, nil, 0) }) else { return name }
        defer { free(text) }
        return String(cString: text)
    }

    /// The process's images, captured again only when an address falls outside them (a library
    /// loaded since). Monitor threads only, under `names`' lock.
    private static let images = Locked<ImageMap?>(nil)

    private static func imageMap(covering addresses: [UInt]) -> ImageMap {
        images.withLock { map in
            if let known = map, addresses.allSatisfy({ known.indexOfImage(at: Backtrace.Address(UInt64($0))) != nil }) {
                return known
            }
            // `capture()` reads each mapped file's header in place, and a file unmapped after
            // /proc/self/maps was read (a library unloaded, another mapping of a file) faulted the
            // monitor thread (SEGV under ThreadSanitizer in the stress tool, once in CI). Read
            // checked instead: such a file is skipped.
            let fresh = ImageMap.capture(using: CheckedMemoryReader(), forProcess: nil)
            map = fresh
            return fresh
        }
    }

    /// This process's memory read through process_vm_readv, which fails on an unmapped page where
    /// a plain read faults. Not the toolchain's `LocalMemoryReader`, which does the same but
    /// leaks a cached page on every failed read (LeakSanitizer found 225 KB in 400 captures).
    private struct CheckedMemoryReader: MemoryReader {
        struct Unreadable: Error {}

        func fetch(from address: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws {
            guard buffer.count > 0 else { return }
            let read = CLongThreadsShims_readOwnMemory(buffer.baseAddress, UInt(address), buffer.count)
            guard read == buffer.count else { throw Unreadable() }
        }
    }

    #if arch(x86_64)
    private static let architecture = "x86_64"
    #elseif arch(arm64)
    private static let architecture = "arm64"
    #else
    private static let architecture = "unknown"
    #endif

    /// LongThreads' own code (its Swift symbols carry the module's mangled name), or the run loop
    /// it drives.
    private static func isLibrarySymbol(raw: String, name: String) -> Bool {
        raw.hasPrefix("$s11LongThreads") || raw.hasPrefix("_$s11LongThreads") || name.hasPrefix("__CFRunLoop")
            || name.hasPrefix("CFRunLoop") || name.hasPrefix("_CFRunLoop") || name.hasPrefix("__CFRUNLOOP_")
    }

    /// The capture's signal handler, or a sanitizer's frames around it.
    private static func isCaptureMachinery(_ frame: StallMonitor.Frame) -> Bool {
        guard let symbol = frame.symbol else { return false }
        return symbol.hasPrefix("CLongThreadsShims_stackCapture") || isSanitizer(symbol) || symbol == "__restore_rt"
    }

    private static func isSanitizer(_ symbol: String) -> Bool {
        ["__tsan", "__asan", "__interceptor_", "___interceptor_", "__sanitizer", "__lsan", "__ubsan", "asan_", "tsan_"]
            .contains { symbol.hasPrefix($0) }
    }

    /// A frame of the work itself: not the library's, not a compiler thunk, not in a system image.
    private static func isWork(_ frame: StallMonitor.Frame) -> Bool {
        guard !frame.isLibrary, let symbol = frame.symbol, !isSanitizer(symbol) else { return false }
        if symbol.hasPrefix("thunk for") || symbol.hasPrefix("reabstraction thunk") || symbol.hasPrefix("partial apply") {
            return false
        }
        let systemImages = ["libc.so", "ld-linux", "libswift", "libFoundation", "libCoreFoundation", "libdispatch", "libgcc_s", "libBlocksRuntime"]
        return !systemImages.contains { frame.image?.hasPrefix($0) ?? false }
    }
}
