/// The TLS handshake a QUIC connection carries in its CRYPTO frames (RFC 9001 §4): the data per
/// direction and packet number space put in order and cut into messages (`QUICCryptoStreams`),
/// the hellos and the server's EncryptedExtensions read into the connection's `TLSInfo`
/// (`TLSHandshakeObserver`, the reader TLS over TCP uses too). It answers, as events, what the
/// connection acts on: the keys are the keyring's, the packets the session's (quic-go's
/// `cryptoSetup` reports its handshake the same way).
///
/// Input: the data of CRYPTO frames of decrypted packets. Output: `tls`, and `Event`s.
struct QUICHandshake {
    /// What the handshake and the connection's packets say of its TLS: SNI, ALPN, suite, group,
    /// resumption, 0-RTT, times; the session adds what only packets say (decrypted, inferred).
    var tls = TLSInfo()
    private var crypto = QUICCryptoStreams()
    private var clientHellos = 0

    /// What a handshake message means for the rest of the connection.
    enum Event {
        /// The client's first ClientHello (a later one answers a HelloRetryRequest): its random
        /// names the connection's secrets in a key log.
        case clientRandom([UInt8])
        /// A ServerHello that is not a HelloRetryRequest: the suite protecting the packets of the
        /// Handshake space and after.
        case suite(UInt16)
        /// The server's stateless reset token for its first CID (its transport parameter 0x02,
        /// RFC 9000 §18.2, in EncryptedExtensions).
        case serverResetToken(ResetToken)
    }

    /// The data of a CRYPTO frame: the events of the messages it completes, in order. Returned,
    /// not acted on here (acting on a ServerHello replays held packets, whose CRYPTO data comes
    /// back).
    mutating func received(_ data: UnsafeRawBufferPointer, at offset: UInt64, space: QUICSpace,
                           from direction: Direction) -> [Event] {
        var events: [Event] = []
        for message in crypto.received(data, at: offset, space: space, from: direction) {
            switch (direction, space, message.type) {
            case (.fromClient, .initial, TLSHandshakeType.clientHello):
                guard let hello = TLSHandshakeObserver.clientHello(message.body, into: &tls, first: clientHellos == 0) else { continue }
                clientHellos += 1
                if clientHellos == 1 { events.append(.clientRandom(hello.random)) }
            case (.fromServer, .initial, TLSHandshakeType.serverHello):
                guard let hello = TLSHandshakeObserver.serverHello(message.body, into: &tls), !hello.helloRetry else { continue }
                events.append(.suite(hello.cipherSuite))
            case (.fromServer, .handshake, TLSHandshakeType.encryptedExtensions):
                TLSHandshakeObserver.encryptedExtensions(message.body, into: &tls) { parameters in
                    parameters.withUnsafeBytes { raw in
                        var p = QUICReader(raw)
                        while p.remaining > 0 {
                            guard let id = p.varint(), let value = p.vector() else { return }
                            if id == 0x02, value.count == 16 { events.append(.serverResetToken(ResetToken(value))) }
                        }
                    }
                }
            default:
                break
            }
        }
        return events
    }

    /// After a Retry or a Version Negotiation the server kept nothing: the client's next Initial
    /// starts the handshake again, its CRYPTO data from offset 0 — perhaps a new ClientHello with
    /// a new random (aioquic makes one), which is then the one the key log names. The facts shown
    /// stay those of the first offer.
    mutating func restart() {
        crypto.restartInitial()
        clientHellos = 0
    }
}
