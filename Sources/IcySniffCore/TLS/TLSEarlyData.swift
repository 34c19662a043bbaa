/// TLS 1.3 0-RTT (RFC 8446 §4.2.10) of one connection: the records a client sent with its
/// ClientHello, held until the server's EncryptedExtensions say whether it accepted them (at
/// most `maxHeld` bytes; past it they are dropped, and the loss is said once they are settled),
/// and, once accepted, the early traffic protection the client's records use until its
/// EndOfEarlyData (`active`).
struct TLSEarlyData {
    /// 0-RTT data held at most (servers accept 16 KiB to a few hundred; more is not 0-RTT).
    static let maxHeld = 1 << 20

    /// The early traffic protection, once the server accepted the early data.
    var protection: RecordProtection? = nil
    /// The client's records are opened with `protection` (from the server's flight to the
    /// client's EndOfEarlyData).
    var active = false
    private var held: [TLSRecordReader.Record] = []
    private var heldBytes = 0
    /// Records past `maxHeld` were dropped.
    private(set) var dropped = false

    var isHolding: Bool { !held.isEmpty }

    /// A 0-RTT record (with its body, or lost) before the ServerHello.
    mutating func hold(_ r: TLSRecordReader.Record) {
        heldBytes += r.length + TLSRecordReader.Record.heldOverhead
        if heldBytes <= Self.maxHeld { held.append(r) } else { dropped = true }
    }

    /// The records held, in arrival order; none are held after.
    mutating func take() -> [TLSRecordReader.Record] {
        defer { held = [] }
        return held
    }
}
