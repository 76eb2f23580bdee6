import Glibc

/// An image's function symbols, read from its file: `.symtab` when the image keeps one, else
/// `.dynsym` (a stripped shared library still names its exported functions there). Names frames
/// the toolchain's symbolicator leaves unnamed. 64-bit little-endian ELF only.
///
/// Read with `pread` from the file (never from the mapping, which may go meanwhile), once per
/// image and kept: a few hundred KB for a large library's table.
struct ElfSymbols: Sendable {
    struct Symbol: Sendable {
        /// The symbol's virtual address in the image (as `nm` prints it).
        var value: UInt
        var size: UInt
        var name: String
    }

    /// Function symbols by address.
    let symbols: [Symbol]
    /// The lowest address a loadable segment asks for (page-aligned): the image's load address is
    /// where this lands.
    let lowestLoadAddress: UInt
    /// Which table named them: `.symtab` or `.dynsym`.
    let table: String

    private static let cache = Locked<[String: ElfSymbols?]>([:])

    /// The table of the image at `path`, read once; nil when it cannot be read. `opening` opens
    /// the file read-only (the caller's, under the descriptor headroom's lock).
    static func of(path: String, opening: (String) -> Int32) -> ElfSymbols? {
        if let known = cache.withLock({ $0[path] }) { return known }
        let read = ElfSymbols(path: path, opening: opening)
        cache.withLock { cache in
            if cache.count > 256 { cache.removeAll() }
            cache[path] = read
        }
        return read
    }

    /// The symbol holding `address`, a virtual address of the image, and how far into it.
    func symbol(at address: UInt) -> (symbol: Symbol, offset: UInt)? {
        var low = 0
        var high = symbols.count
        while low < high { // the first symbol above `address`
            let middle = (low + high) / 2
            if symbols[middle].value <= address { low = middle + 1 } else { high = middle }
        }
        // Among symbols at the same address (aliases) any will do; a symbol must hold the address.
        for index in stride(from: low - 1, through: max(0, low - 4), by: -1) {
            let symbol = symbols[index]
            if address - symbol.value < max(symbol.size, 1) { return (symbol, address - symbol.value) }
        }
        return nil
    }

    private init?(path: String, opening: (String) -> Int32) {
        let fd = opening(path)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        let file = ElfFile(fd: fd)
        guard let header = file.bytes(at: 0, count: 64), header.starts(with: [0x7F, 0x45, 0x4C, 0x46]),
              header[4] == 2, header[5] == 1 else { return nil } // ELFCLASS64, little-endian
        let programHeaders = (offset: UInt(header.load(0x20, UInt64.self)), size: Int(header.load(0x36, UInt16.self)),
                              count: Int(header.load(0x38, UInt16.self)))
        let sectionHeaders = (offset: UInt(header.load(0x28, UInt64.self)), size: Int(header.load(0x3A, UInt16.self)),
                              count: Int(header.load(0x3C, UInt16.self)))
        guard let sections = file.bytes(at: sectionHeaders.offset, count: sectionHeaders.size * sectionHeaders.count),
              let segments = file.bytes(at: programHeaders.offset, count: programHeaders.size * programHeaders.count)
        else { return nil }
        var lowest = UInt.max
        for index in 0..<programHeaders.count where segments.load(index * programHeaders.size, UInt32.self) == 1 { // PT_LOAD
            lowest = min(lowest, UInt(segments.load(index * programHeaders.size + 0x10, UInt64.self)))
        }
        guard lowest != .max else { return nil }
        lowestLoadAddress = lowest & ~UInt(4_095)
        func section(_ index: Int) -> (type: UInt32, offset: UInt, size: Int, link: Int) {
            let base = index * sectionHeaders.size
            return (sections.load(base + 4, UInt32.self), UInt(sections.load(base + 0x18, UInt64.self)),
                    Int(sections.load(base + 0x20, UInt64.self)), Int(sections.load(base + 0x28, UInt32.self)))
        }
        let all = (0..<sectionHeaders.count).map(section)
        // SHT_SYMTAB (2), else SHT_DYNSYM (11).
        guard let chosen = all.firstIndex(where: { $0.type == 2 }) ?? all.firstIndex(where: { $0.type == 11 }),
              all[chosen].link < all.count,
              let entries = file.bytes(at: all[chosen].offset, count: all[chosen].size),
              let names = file.bytes(at: all[all[chosen].link].offset, count: all[all[chosen].link].size)
        else { return nil }
        table = all[chosen].type == 2 ? ".symtab" : ".dynsym"
        symbols = Self.functions(entries: entries, names: names)
    }

    /// The defined function symbols (STT_FUNC, STT_GNU_IFUNC) of a table, by address.
    private static func functions(entries: [UInt8], names: [UInt8]) -> [Symbol] {
        var symbols: [Symbol] = []
        for base in stride(from: 0, to: entries.count - 23, by: 24) {
            let kind = entries[base + 4] & 0xF
            let sectionIndex = entries.load(base + 6, UInt16.self)
            let value = UInt(entries.load(base + 8, UInt64.self))
            guard kind == 2 || kind == 10, sectionIndex != 0, value != 0 else { continue }
            let nameOffset = Int(entries.load(base, UInt32.self))
            guard nameOffset < names.count else { continue }
            let end = names[nameOffset...].firstIndex(of: 0) ?? names.count
            let name = String(decoding: names[nameOffset..<end], as: UTF8.self)
            symbols.append(Symbol(value: value, size: UInt(entries.load(base + 16, UInt64.self)), name: name))
        }
        return symbols.sorted { $0.value < $1.value }
    }
}

/// Reads stretches of an open file.
private struct ElfFile {
    let fd: Int32

    /// `count` bytes at `offset`, or nil when the file is shorter or the size absurd (over 256 MB).
    func bytes(at offset: UInt, count: Int) -> [UInt8]? {
        guard count >= 0, count <= 1 << 28 else { return nil }
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let read = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, count - done, off_t(offset) + off_t(done)) }
            if read < 0, errno == EINTR { continue }
            guard read > 0 else { return nil }
            done += read
        }
        return bytes
    }
}

private extension [UInt8] {
    /// A little-endian integer at `offset` (0 past the end).
    func load<T: FixedWidthInteger>(_ offset: Int, _: T.Type) -> T {
        guard offset >= 0, offset + MemoryLayout<T>.size <= count else { return 0 }
        return withUnsafeBytes { T(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: T.self)) }
    }
}
