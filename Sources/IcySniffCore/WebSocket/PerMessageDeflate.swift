import CZlib

/// permessage-deflate (RFC 7692) as the server accepted it: which directions reset their
/// DEFLATE context after each message.
struct PerMessageDeflate: Equatable {
    /// The server resets its compression context after each message (`server_no_context_takeover`).
    var serverNoContextTakeover = false
    /// The client does (`client_no_context_takeover`).
    var clientNoContextTakeover = false

    /// The accepted extension in a `Sec-WebSocket-Extensions` value (RFC 7692 §5), nil when the
    /// server did not accept permessage-deflate. Window sizes need no setting: inflating with the
    /// largest window (15 bits) reads data compressed with any smaller one.
    init?(extensions: String) {
        var found = false
        for offer in extensions.split(separator: ",") {
            let params = offer.split(separator: ";").map { $0.trimmingASCIIWhitespace().lowercased() }
            guard params.first == "permessage-deflate" else { continue }
            found = true
            for p in params.dropFirst() {
                let name = p.split(separator: "=").first.map { $0.trimmingASCIIWhitespace() } ?? ""
                if name == "server_no_context_takeover" { serverNoContextTakeover = true }
                if name == "client_no_context_takeover" { clientNoContextTakeover = true }
            }
            break   // the server accepts one configuration
        }
        guard found else { return nil }
    }
}

/// One direction's DEFLATE decompressor (raw DEFLATE, zlib's `inflate`). A message is its
/// payload plus the 0x00 0x00 0xFF 0xFF the sender removed (RFC 7692 §7.2.2); with context
/// takeover the window carries over to the next message, without it the state is reset.
final class MessageInflater {
    private var z: UnsafeMutablePointer<z_stream>
    private var out = [UInt8](repeating: 0, count: 16 << 10)
    /// True once inflating failed: with context takeover no later message of the direction can
    /// be read (its window is unknown).
    private(set) var broken = false

    init?() {
        z = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        z.initialize(to: z_stream())
        guard inflateInit2_(z, -15, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            z.deallocate()
            return nil
        }
    }

    deinit {
        inflateEnd(z)
        z.deallocate()
    }

    /// The context is lost (a gap, a failure): nothing more inflates until `reset`.
    func markBroken() { broken = true }

    /// A new message, without context takeover: a fresh window.
    func reset() {
        inflateReset(z)
        broken = false
    }

    /// Inflates `input`, handing each block of output to `emit`. False when the data is not
    /// DEFLATE (the direction is then broken).
    func inflate(_ input: UnsafeRawBufferPointer, _ emit: (UnsafeRawBufferPointer) -> Void) -> Bool {
        guard !broken else { return false }
        guard let base = input.baseAddress, !input.isEmpty else { return true }
        z.pointee.next_in = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: UInt8.self))
        z.pointee.avail_in = UInt32(input.count)
        return out.withUnsafeMutableBytes { buffer in
            while true {
                z.pointee.next_out = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
                z.pointee.avail_out = UInt32(buffer.count)
                let rc = CZlib.inflate(z, Z_SYNC_FLUSH)
                let n = buffer.count - Int(z.pointee.avail_out)
                if n > 0 { emit(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[0..<n])) }
                switch rc {
                case Z_OK:
                    if z.pointee.avail_in == 0 && z.pointee.avail_out != 0 { return true }
                case Z_BUF_ERROR:
                    return true
                case Z_STREAM_END:
                    // A final block (BFINAL): the sender ended its DEFLATE stream; the next
                    // message starts a new one (RFC 7692 §7.2.3.3 allows it).
                    inflateReset(z)
                    if z.pointee.avail_in == 0 { return true }
                default:
                    broken = true
                    return false
                }
            }
        }
    }

    static let messageTail: [UInt8] = [0x00, 0x00, 0xFF, 0xFF]
}
