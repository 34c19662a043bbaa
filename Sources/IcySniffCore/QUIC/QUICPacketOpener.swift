/// One connection's QUIC packet protection (RFC 9001 §5): header protection removed, the packet
/// number decoded against the largest opened so far in its direction and space (RFC 9000 §A.3),
/// the payload opened into the tracker's `PacketWorkspace`. For 1-RTT packets, the key phase bit
/// and the packet number pick the keys (`PhaseKeys.keys`), and a packet of the next phase that
/// opens is the key update. It only opens, as quic-go's `longHeaderOpener` and `updatableAEAD`
/// do: what a packet means, and counting it, is the session's.
///
/// Input: a whole packet, where its packet number starts, the keys. Output: its plaintext (in the
/// workspace, valid until the next packet of any connection is opened), or why there is none.
struct QUICPacketOpener {
    /// The largest packet opened: no UDP payload is larger (65,507 bytes over IPv4; IPv6
    /// without jumbograms, 65,527).
    static let maxPacket = 65536 + 64
    let workspace: QUICConnectionSession.PacketWorkspace
    /// The largest packet number opened in each space, per direction.
    private var largestPN = PerDirection(PerSpace<UInt64?>(nil))

    init(workspace: QUICConnectionSession.PacketWorkspace) { self.workspace = workspace }

    /// What became of a 1-RTT packet.
    enum Outcome {
        case opened(UnsafeRawBufferPointer)
        /// It does not authenticate (or its header could not be unprotected): counted and flagged.
        case failed
        /// The next phase's keys cannot be derived: not tried.
        case untried
    }

    /// A 1-RTT packet made ready for the decryption thread: its unprotected header (in the
    /// workspace), its sealed payload, its number, and the keys chosen for it.
    ///
    /// Read at once and dropped: the session hands it to `DecryptionQueue.submit`, whose batch
    /// keeps the keys alive until the packet is opened. `keys` is unretained so that the struct
    /// is trivial: Swift copies and destroys an Optional of a struct this large that holds a
    /// counted reference through Optional's generic value witnesses (about 230 instructions a
    /// packet on the pipeline's thread, QUIC twin's h3.pcap), and a strong reference made from
    /// it for `submit` was one more retain and release a packet. Safe because the keys it names
    /// are the connection's `PhaseKeys` current or previous ones, which nothing replaces between
    /// `prepareShort` and the submit that follows it.
    struct Prepared {
        let header: UnsafeRawBufferPointer
        let sealed: UnsafeRawBufferPointer
        let packetNumber: UInt64
        let keys: Unmanaged<QUICPacketKeys>
    }

    /// What `prepareShort` made of a 1-RTT packet.
    enum Preparation {
        case prepared(Prepared)
        /// It cannot be opened (counted as failed).
        case failed
        /// Whether it authenticates decides how the packets after it are read, so it is opened
        /// where it is read (`openShort`), never on the thread:
        /// - its key phase asks for the next phase's keys: a key update if it opens with them (or a
        ///   late packet of the previous phase, or a forged bit). Handed to the thread with the next
        ///   keys, the update was applied only when its result came back, after the packets behind
        ///   it had had their keys chosen by the old phase: a peer that updates its keys again
        ///   within the packets in flight (1.25 MiB; the hostile `keyupdate` shape, every packet a
        ///   new phase) had every packet after the second update fail to decrypt;
        /// - its number is more than `maxUncheckedAdvance` past the largest so far: every later
        ///   packet number is decoded against the largest (RFC 9000 §A.3), which only a packet that
        ///   authenticates may move. A damaged or forged header prepared for the thread moved it at
        ///   once, and the packets after it failed (a capture with flipped bits: 27 failures on the
        ///   thread against 5 where packets open as they are read).
        /// Either way the run's outputs depended on where the thread started.
        case openHere
    }

    /// How far a packet prepared for the thread may move the largest packet number before it is
    /// known to authenticate: an eighth of the smallest decoding window (a one-byte packet number,
    /// 256), so that a damaged packet that moved it leaves every later packet decoded as it would
    /// have been, reordered by up to 96.
    static let maxUncheckedAdvance: UInt64 = 32

    /// Opens a long-header packet (or any packet whose keys are known): its plaintext payload,
    /// nil when it does not authenticate.
    mutating func open(_ whole: UnsafeRawBufferPointer, pnOffset: Int, keys: QUICPacketKeys, space: QUICSpace,
                       from direction: Direction, longHeader: Bool) -> UnsafeRawBufferPointer? {
        let keys = Unmanaged.passUnretained(keys)
        guard let (header, pn, _) = unprotect(whole, pnOffset: pnOffset, keys: keys, space: space, from: direction, longHeader: longHeader)
        else { return nil }
        return decrypt(whole, header: header, pn: pn, keys: keys, space: space, from: direction)
    }

    /// A 1-RTT packet: the key phase bit picks the current, next or previous keys (RFC 9001 §6);
    /// a packet the next phase's keys do not open is tried with the previous ones.
    ///
    /// The keys are named unretained (`Unmanaged`, as `unprotect` and `decrypt` take them): `k`
    /// holds its current and previous keys, and nothing here replaces them before they are
    /// used but `update`, after which the next keys it was given are `k`'s current ones. Read
    /// as strong references across the calls, they cost two retains and releases a packet.
    mutating func openShort(_ whole: UnsafeRawBufferPointer, pnOffset: Int, keys k: QUICConnectionSession.PhaseKeys,
                            from direction: Direction) -> Outcome {
        guard let (header, pn, phase) = unprotect(whole, pnOffset: pnOffset, keys: .passUnretained(k.current), space: .application,
                                                  from: direction, longHeader: false) else { return .failed }
        func outcome(_ p: UnsafeRawBufferPointer?) -> Outcome { p.map { .opened($0) } ?? .failed }
        switch k.keys(phase: phase, packetNumber: pn) {
        case .current:
            guard let p = decrypt(whole, header: header, pn: pn, keys: .passUnretained(k.current), space: .application, from: direction)
            else { return .failed }
            if k.firstPacketOfCurrent == nil { k.firstPacketOfCurrent = pn }
            return .opened(p)
        case .previous(let previous):
            return outcome(decrypt(whole, header: header, pn: pn, keys: previous, space: .application, from: direction))
        case .next(let next):
            if let p = decrypt(whole, header: header, pn: pn, keys: next, space: .application, from: direction) {
                k.update(to: next.takeUnretainedValue(), phase: phase, firstPacket: pn)
                return .opened(p)
            }
            // Not the next phase's after all: a late packet of the previous keys.
            guard let previous = k.previous else { return .failed }
            return outcome(decrypt(whole, header: header, pn: pn, keys: .passUnretained(previous), space: .application, from: direction))
        case .none:
            return .untried
        }
    }

    /// A 1-RTT packet for the decryption thread: header protection removed and the keys chosen
    /// here, by the key phase bit and the packet number alone (the thread cannot tell back which
    /// keys opened it, so there is no second try).
    mutating func prepareShort(_ whole: UnsafeRawBufferPointer, pnOffset: Int, keys k: QUICConnectionSession.PhaseKeys,
                               from direction: Direction) -> Preparation {
        guard let (header, pn, phase) = unprotect(whole, pnOffset: pnOffset, keys: .passUnretained(k.current), space: .application,
                                                  from: direction, longHeader: false) else { return .failed }
        if let largest = largestPN[direction].application, pn > largest &+ Self.maxUncheckedAdvance { return .openHere }
        let keys: Unmanaged<QUICPacketKeys>
        switch k.keys(phase: phase, packetNumber: pn) {
        case .current:
            keys = .passUnretained(k.current)
            if k.firstPacketOfCurrent == nil { k.firstPacketOfCurrent = pn }
        case .previous(let previous):
            keys = previous
        case .next:
            return .openHere
        case .none:
            return .failed
        }
        if pn > largestPN[direction].application ?? 0 { largestPN[direction].application = pn }
        return .prepared(Prepared(header: UnsafeRawBufferPointer(rebasing: workspace.buffer[0..<header]),
                                  sealed: UnsafeRawBufferPointer(rebasing: whole[header...]), packetNumber: pn, keys: keys))
    }

    /// The unprotected header (in the workspace): its length, the full packet number, and the
    /// key-phase bit.
    /// `keys` is held by the caller's `PhaseKeys` or its own reference for the call.
    private func unprotect(_ whole: UnsafeRawBufferPointer, pnOffset: Int, keys: Unmanaged<QUICPacketKeys>, space: QUICSpace,
                           from direction: Direction, longHeader: Bool) -> (Int, UInt64, Bool)? {
        guard whole.count >= pnOffset + 4 + 16, whole.count <= Self.maxPacket else { return nil }
        workspace.reserve(whole.count)
        let sample = UnsafeRawBufferPointer(rebasing: whole[(pnOffset + 4)..<(pnOffset + 20)])
        guard let mask = keys._withUnsafeGuaranteedRef({ $0.mask(sample) }) else { return nil }
        let first = whole[0] ^ (mask.0 & (longHeader ? 0x0f : 0x1f))
        let pnLength = Int(first & 3) + 1
        var truncated: UInt64 = 0
        let out = workspace.buffer
        out.copyMemory(from: UnsafeRawBufferPointer(rebasing: whole[0..<(pnOffset + pnLength)]))
        out[0] = first
        for k in 0..<pnLength {
            let m = k == 0 ? mask.1 : k == 1 ? mask.2 : k == 2 ? mask.3 : mask.4
            out[pnOffset + k] = whole[pnOffset + k] ^ m
            truncated = truncated << 8 | UInt64(out[pnOffset + k])
        }
        let pn = decodePacketNumber(largest: largestPN[direction][space], truncated: truncated, bits: pnLength * 8)
        return (pnOffset + pnLength, pn, first & 0x04 != 0)
    }

    /// `keys`: as `unprotect`'s.
    private mutating func decrypt(_ whole: UnsafeRawBufferPointer, header: Int, pn: UInt64, keys: Unmanaged<QUICPacketKeys>,
                                  space: QUICSpace, from direction: Direction) -> UnsafeRawBufferPointer? {
        let scratch = workspace.buffer
        let sealed = UnsafeRawBufferPointer(rebasing: whole[header...])
        let headerBytes = UnsafeRawBufferPointer(rebasing: scratch[0..<header])
        let plain = UnsafeMutableRawBufferPointer(rebasing: scratch[header...])
        guard let n = keys._withUnsafeGuaranteedRef({ $0.open(packetNumber: pn, header: headerBytes, sealed: sealed, into: plain) })
        else { return nil }
        largestPN[direction][space] = max(largestPN[direction][space] ?? 0, pn)
        return UnsafeRawBufferPointer(rebasing: scratch[header..<(header + n)])
    }
}
