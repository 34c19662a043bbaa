extension QUICConnectionSession {
    /// Where the packets of a tracker's connections are unprotected and opened, one packet at a
    /// time: all of it happens on the thread that reads packets (the decryption thread gets its
    /// own copies), and a packet's frames are read before the next packet of any connection is
    /// opened, so the connections share it. 64 KiB per connection were touched a page or two
    /// each: 4-8 KiB of every one-packet connection of a flood.
    final class PacketWorkspace {
        private(set) var buffer = UnsafeMutableRawBufferPointer(start: nil, count: 0)
        deinit { buffer.deallocate() }

        /// Room for a packet of `n` bytes.
        func reserve(_ n: Int) {
            guard buffer.count < n else { return }
            buffer.deallocate()
            buffer = .allocate(byteCount: min(QUICPacketOpener.maxPacket, max(2048, 1 << (Int.bitWidth - (n - 1).leadingZeroBitCount))), alignment: 16)
        }
        /// The run's key-log searches for connections whose ClientHello was not captured.
        let searches = QUICKeyTrial.Budget()
        /// Requests estimated without keys (`QUICPacketPattern`) that the tracker's open
        /// connections keep, at most `QUICPacketPattern.maxKept`.
        var estimates = 0
    }
}
