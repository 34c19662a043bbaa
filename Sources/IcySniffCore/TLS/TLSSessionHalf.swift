extension TLSSession {
    /// What one direction of the connection holds (Go's `halfConn`): its record framing, its
    /// handshake messages (in clear, and TLS 1.3's decrypted ones), the protection of its records
    /// before and after its handshake ends, and how far its plaintext has gone.
    final class Half {
        let records = TLSRecordReader()
        var handshake = TLSHandshakeBuffer()
        /// Decrypted handshake messages (TLS 1.3).
        var sealedHandshake = TLSHandshakeBuffer()
        /// From here on its handshake records are encrypted (TLS 1.2: after its ChangeCipherSpec;
        /// TLS 1.3: the server's after its ServerHello).
        var encrypted = false
        /// The protection of its next record during the handshake (TLS 1.3: the handshake
        /// traffic keys), and (TLS 1.2) the one its ChangeCipherSpec switches to.
        var protection: RecordProtection? = nil
        var pending: RecordProtection? = nil
        /// Its decryption once its handshake is over (TLS 1.2: from its ChangeCipherSpec; TLS
        /// 1.3: after its Finished): it owns the record protection and applies KeyUpdate. Its
        /// records are opened here, or on the decryption queue's thread.
        var decryptor: DirectionDecryptor? = nil
        /// It stops being decrypted at its first record that does not authenticate.
        var decryptionFailed = false
        /// Application-data bytes (record headers included), counted on every record and added
        /// to `info` at the connection's end: each change to `info` copies it to the connection.
        var applicationBytes: UInt64 = 0
    }
}
