import Foundation

/// The run-loop modes a thread's work was posted in, as bits, so that picking the items a mode may
/// run is one AND per item.
///
/// Bit 0 is the default mode, bit 1 stands for `.common` ("any mode in the common set"), and each
/// custom mode gets the next free bit when work is first posted in it.
struct ModeTable {
    typealias Mask = UInt64

    static let defaultBit: Mask = 1 << 0
    static let commonBit: Mask = 1 << 1
    /// Custom modes a thread can use: 62 bits remain after default and common.
    static let customModeLimit = 62

    private var bits: [String: Mask] = [:]
    private var names: [String] = []
    /// Modes in the common set: the default mode, and those added with `addCommonMode`.
    private(set) var commonSet: Mask = defaultBit

    /// The mask for `modes`, registering new custom modes; `register` is called for each new one
    /// (to add the run-loop source to it) before this returns.
    mutating func mask(
        for modes: [RunLoop.Mode],
        register: (String) throws(LongThreadError) -> Void
    ) throws(LongThreadError) -> Mask {
        // The common case, without hashing.
        if modes.count == 1, modes[0] == .default { return Self.defaultBit }
        if modes.isEmpty { throw .noModes }
        var mask: Mask = 0
        for mode in modes {
            mask |= try bit(for: mode, register: register)
        }
        return mask
    }

    /// The bit of `mode`, registering it (`register` adds the loop's sources to it, which makes CF
    /// create the mode) the first time. A mode `register` refused stays unregistered.
    mutating func bit(for mode: RunLoop.Mode, register: (String) throws(LongThreadError) -> Void) throws(LongThreadError) -> Mask {
        if mode == .default { return Self.defaultBit }
        if mode == .common { return Self.commonBit }
        if let bit = bits[mode.rawValue] { return bit }
        try Self.validate(mode)
        guard names.count < Self.customModeLimit else { throw .tooManyModes(limit: Self.customModeLimit) }
        try register(mode.rawValue)
        let bit: Mask = 1 << Mask(names.count + 2)
        names.append(mode.rawValue)
        bits[mode.rawValue] = bit
        return bit
    }

    /// Refuses a name CF would cut at a NUL: work keyed by the whole name would never be eligible
    /// in the mode CF runs, and a draining stop would wait for it for ever.
    static func validate(_ mode: RunLoop.Mode) throws(LongThreadError) {
        if mode.rawValue.utf8.contains(0) { throw .invalidMode(mode) }
    }

    /// Adds a registered mode to the common set, so `.common` work runs in it.
    mutating func addToCommonSet(_ bit: Mask) {
        commonSet |= bit
    }

    /// The entries a run in the mode named `name` may run: those posted in it, plus `.common` work
    /// when it is a common mode. 0 for a mode no work was ever posted in.
    func eligibility(inModeNamed name: String) -> Mask {
        let bit: Mask
        if name == RunLoop.Mode.default.rawValue {
            bit = Self.defaultBit
        } else if let custom = bits[name] {
            bit = custom
        } else {
            return 0
        }
        return bit | (commonSet & bit != 0 ? Self.commonBit : 0)
    }

    /// The mode a stopping thread runs to drain an entry posted with `mask`: its first mode.
    func drainMode(for mask: Mask) -> String {
        if mask & (Self.defaultBit | Self.commonBit) != 0 { return RunLoop.Mode.default.rawValue }
        let index = mask.trailingZeroBitCount - 2
        return names[index]
    }
}
