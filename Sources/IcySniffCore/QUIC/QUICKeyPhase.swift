extension QUICConnectionSession {
    /// The 1-RTT keys of one direction: the current key phase's, with the previous phase's kept
    /// for late packets (RFC 9001 §6.5) and the next one's derived when a packet flips the bit.
    /// A class, changed where it lies: as a struct in `QUICKeyring.application`, every packet's reads of its
    /// phase and keys copied it (three references counted up and down each time).
    final class PhaseKeys {
        var current: QUICPacketKeys
        var phase: Bool = false
        var previous: QUICPacketKeys? = nil
        var next: QUICPacketKeys? = nil
        var firstPacketOfCurrent: UInt64? = nil
        var updates = 0

        init(current: QUICPacketKeys) { self.current = current }

        /// Which keys. `previous` and `next` carry them unretained, so that the choice is trivial:
        /// as strong payloads, each choice was copied, retained and released by the enum's
        /// outlined value operations, three reference counts a packet. They stay held by this
        /// object (`update` moves the next keys to `current` and the current ones to `previous`),
        /// which the caller holds for the packet. `current` is read from `current`.
        enum Choice {
            case current
            case previous(Unmanaged<QUICPacketKeys>)
            case next(Unmanaged<QUICPacketKeys>)
            /// The next phase's keys cannot be derived.
            case none
        }

        /// The keys for a packet of key phase `phase` numbered `pn`: the current keys for the
        /// current phase; for the other, the previous keys when the packet is numbered below the
        /// first of the current phase (a late packet), else the next phase's (a key update, derived
        /// once and kept until the update happens). The one rule of both ways a 1-RTT packet is
        /// opened (`QUICPacketOpener.openShort` here, `prepareShort` for the decryption thread).
        func keys(phase: Bool, packetNumber pn: UInt64) -> Choice {
            if phase == self.phase { return .current }
            if let previous, let start = firstPacketOfCurrent, pn < start { return .previous(.passUnretained(previous)) }
            if next == nil { next = current.next() }
            guard let next else { return .none }
            return .next(.passUnretained(next))
        }

        /// A key update: the next phase's keys take over from packet `pn` on; the current ones
        /// stay for late packets.
        func update(to next: QUICPacketKeys, phase: Bool, firstPacket pn: UInt64) {
            previous = current
            current = next
            self.next = nil
            self.phase = phase
            firstPacketOfCurrent = pn
            updates += 1
        }
    }
}
