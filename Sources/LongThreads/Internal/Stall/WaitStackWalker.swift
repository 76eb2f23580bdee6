import CLongThreadsShims
import Glibc

/// Walks the stack of a thread asleep in the kernel from the kernel's wait record (the user stack
/// pointer and instruction `/proc/self/task/<tid>/syscall` gives), without a signal: the thread
/// sleeps on, undisturbed, while the monitor reads its stack through process_vm_readv (an
/// unmapped page is an error, never a fault).
///
/// The wait record has no frame pointer, and the C library's system call wrappers (`poll`,
/// `write`, `nanosleep`, ...) keep none: they are short frames that push a few registers and
/// perhaps a return address of their own. So the walk:
/// 1. scans the words from the stack pointer up for return addresses (a word pointing into an
///    executable mapping, just after a call instruction): the wrapper's own and, last, the one
///    into the code that called it, the first outside the wrapper's image;
/// 2. stops at the first frame record (a saved frame pointer above it, followed by a return
///    address, whose next record is as plausible or ends the chain) and follows frame pointers
///    from there, as Swift, this library and code built with `-fno-omit-frame-pointer` keep them.
///
/// It is a heuristic, as any walk without unwind tables: a caller built without frame pointers
/// ends the stack there; a stale frame record left in the caller's own locals (an earlier call's)
/// can name the caller's caller at an earlier call site; on arm64 a wrapper that keeps its return
/// address in the link register alone hides the caller's own frame (its callers remain).
enum WaitStackWalker {
    /// Bytes of stack scanned above the stack pointer for the wrapper's frames and the first
    /// frame record; the frame-pointer chain itself is followed beyond it.
    static let scanWindow = 16_384
    /// The most frames kept (as the signal's capture).
    static let capacity = StackSampler.capacity
    /// The largest gap between two frame records: a frame larger than this ends the walk.
    private static let largestFrame: UInt = 1 << 20

    /// The addresses of the stack of the thread asleep with stack pointer `stackPointer` at
    /// instruction `instruction`, innermost first (the instruction, then return addresses).
    static func walk(stackPointer: UInt, instruction: UInt) -> [UInt] {
        let code = ExecutableMappings.current()
        let stack = StackWindow(from: stackPointer, count: scanWindow)
        var frames = [instruction]
        let wrapperImage = code.image(at: instruction)
        var collecting = true
        var slot = stackPointer
        while slot + 16 <= stack.end, frames.count < capacity {
            if isFrameRecord(at: slot, stack: stack, code: code) {
                followFramePointers(from: slot, stack: stack, code: code, into: &frames)
                break
            }
            if collecting, let word = stack.word(at: slot), isReturnAddress(word, code: code) {
                frames.append(word)
                // The first return address outside the wrapper's image is its caller's: what
                // lies above it, up to the caller's frame record, is the caller's locals, where
                // stale return addresses of earlier calls may lie.
                if code.image(at: word) != wrapperImage { collecting = false }
            }
            slot += UInt(MemoryLayout<UInt>.size)
        }
        return frames
    }

    /// Appends the return address of the frame record at `record` and of each record it leads to.
    private static func followFramePointers(
        from record: UInt, stack: StackWindow, code: ExecutableMappings, into frames: inout [UInt]
    ) {
        var record = record
        while frames.count < capacity,
              let next = stack.word(at: record), let returnAddress = stack.word(at: record + 8),
              isReturnAddress(returnAddress, code: code) {
            frames.append(returnAddress)
            guard next > record, next - record <= largestFrame, next % 16 == 0 else { break }
            record = next
        }
    }

    /// A saved frame pointer at `slot` (above it, 16-byte aligned, within a frame's size),
    /// followed by a return address, and leading to a record that is as plausible or that ends
    /// the chain (a zero frame pointer).
    private static func isFrameRecord(at slot: UInt, stack: StackWindow, code: ExecutableMappings) -> Bool {
        func plausible(_ record: UInt, above below: UInt) -> Bool {
            record > below && record - below <= largestFrame && record % 16 == 0
        }
        guard let saved = stack.word(at: slot), plausible(saved, above: slot),
              let returnAddress = stack.word(at: slot + 8), isReturnAddress(returnAddress, code: code),
              let further = stack.word(at: saved) else { return false }
        if further == 0 { return true }
        guard plausible(further, above: saved), let next = stack.word(at: saved + 8) else { return false }
        return isReturnAddress(next, code: code)
    }

    /// An address in executable code just after a call instruction.
    static func isReturnAddress(_ address: UInt, code: ExecutableMappings) -> Bool {
        guard address > 8, code.image(at: address) != nil else { return false }
        #if arch(x86_64)
        // call rel32 (E8 xx xx xx xx), or an indirect call (FF /2) of 2 to 7 bytes, with any prefix.
        var bytes = (UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0), UInt8(0))
        let read = withUnsafeMutableBytes(of: &bytes) {
            CLongThreadsShims_readOwnMemory($0.baseAddress, address - 7, 7)
        }
        guard read == 7 else { return false }
        let before = withUnsafeBytes(of: bytes) { Array($0) } // before[6] is the byte just before
        if before[2] == 0xE8 { return true }
        for length in 2...7 where before[7 - length] == 0xFF && (before[8 - length] >> 3) & 7 == 2 {
            return true
        }
        return false
        #elseif arch(arm64)
        // bl imm26, or blr xN.
        var instruction: UInt32 = 0
        guard CLongThreadsShims_readOwnMemory(&instruction, address - 4, 4) == 4 else { return false }
        return instruction & 0xFC00_0000 == 0x9400_0000 || instruction & 0xFFFF_FC1F == 0xD63F_0000
        #else
        return false
        #endif
    }
}

/// A copy of a stretch of a thread's stack, read once; words beyond it are read one by one.
struct StackWindow {
    private let start: UInt
    private let words: [UInt]
    /// Just past the last word copied.
    var end: UInt { start + UInt(words.count * MemoryLayout<UInt>.size) }

    /// Copies up to `count` bytes from `address`, page by page, stopping at the first page that
    /// cannot be read (the top of the stack).
    init(from address: UInt, count: Int) {
        start = address
        let wordSize = MemoryLayout<UInt>.size
        var words = [UInt](repeating: 0, count: count / wordSize)
        var copied = 0
        words.withUnsafeMutableBytes { buffer in
            while copied < buffer.count {
                let pageEnd = (Int(address) + copied) / 4_096 * 4_096 + 4_096
                let chunk = min(buffer.count - copied, pageEnd - (Int(address) + copied))
                let read = CLongThreadsShims_readOwnMemory(buffer.baseAddress! + copied, address + UInt(copied), chunk)
                guard read == chunk else { break }
                copied += chunk
            }
        }
        self.words = Array(words.prefix(copied / wordSize))
    }

    /// The word at `address`, if it can be read.
    func word(at address: UInt) -> UInt? {
        let wordSize = UInt(MemoryLayout<UInt>.size)
        if address >= start, address + wordSize <= end, address % wordSize == 0 {
            return words[Int((address - start) / wordSize)]
        }
        var value: UInt = 0
        return CLongThreadsShims_readOwnMemory(&value, address, Int(wordSize)) == Int(wordSize) ? value : nil
    }
}

/// The process's executable mappings, from `/proc/self/maps`: which addresses are code, and of
/// which image.
struct ExecutableMappings {
    private struct Mapping {
        var start: UInt
        var end: UInt
        var path: String
    }

    private let mappings: [Mapping]

    /// The mappings now (an empty list if the file cannot be read).
    static func current() -> ExecutableMappings {
        ExecutableMappings(maps: ProcFile.read("/proc/self/maps") ?? "")
    }

    /// Parses lines `start-end perms offset dev inode [path]`, keeping the executable ones but
    /// writable anonymous ones: with a library loaded that asks for an executable stack
    /// (GNU_STACK RWE, as Swift 6.3's libswiftRuntime.so), glibc maps every thread's stack rwx,
    /// and a stack word that follows bytes looking like a call would pass for a return address.
    init(maps: String) {
        mappings = maps.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count >= 5, fields[1].contains("x") else { return nil }
            let bounds = fields[0].split(separator: "-")
            guard bounds.count == 2, let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16) else { return nil }
            let path = fields.count == 6 ? fields[5].trimmingPrefix(while: { $0 == " " }) : ""
            if fields[1].contains("w"), path.isEmpty || path.hasPrefix("[") { return nil }
            return Mapping(start: start, end: end, path: String(path))
        }.sorted { $0.start < $1.start }
    }

    /// The path of the image whose code holds `address` (`""` for anonymous code), or nil when
    /// the address is not in executable memory.
    func image(at address: UInt) -> String? {
        var low = 0
        var high = mappings.count
        while low < high { // the first mapping that starts above `address`
            let middle = (low + high) / 2
            if mappings[middle].start <= address { low = middle + 1 } else { high = middle }
        }
        guard low > 0, address < mappings[low - 1].end else { return nil }
        return mappings[low - 1].path
    }
}

/// Reading a `/proc` file whole, opened under the descriptor headroom's rule.
enum ProcFile {
    /// The file's text, or nil when it cannot be opened or is empty.
    static func read(_ path: String) -> String? {
        let fd = DescriptorHeadroom.openBriefly(path)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[..<count]
        }
        return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
    }
}
