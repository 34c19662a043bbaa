/// What each encrypted record of a TLS connection is, told from its direction, length and time
/// alone, keys or not: the client's 0-RTT records before the ServerHello; TLS 1.3's encrypted
/// handshake (the server's flight up to its Finished, the client's EndOfEarlyData and Finished,
/// the NewSessionTickets the server sends once it read that Finished); application data. The
/// keyless estimates (`RecordPattern`) read the application data's records; the session reads
/// the handshake's end from the client's Finished.
///
/// Input: each application-data record (`TLSRecordReader.Record`: length, first and last byte's
/// capture time) of each direction, with what the handshake showed so far (version, 0-RTT
/// offered, the suite's record overhead and Finished length). Output: its role; the estimates.
struct TLSRecordRoles {
    enum ClientRole: Equatable {
        /// EndOfEarlyData or Finished (TLS 1.3): the client's flight ends the handshake.
        case handshake
        /// A request's bytes; `withFinished`: sent with the Finished (within 1 ms of it).
        case data(withFinished: Bool)
    }

    enum ServerRole: Equatable {
        /// TLS 1.3: the server's encrypted handshake, before the client's Finished.
        case handshake
        /// TLS 1.3: a NewSessionTicket (not part of a response).
        case ticket
        case data
    }

    /// Without keys, what the records' sizes and times say.
    private(set) var pattern = RecordPattern()
    /// TLS 1.3: the client's Finished (its first encrypted record after the ServerHello, or the
    /// second after an EndOfEarlyData), and whether the server's Finished was seen (records
    /// after it and before the client's are 0.5-RTT data); the server's records before it.
    private var clientFinishedAt: Timestamp? = nil
    private var serverFinishedSeen = false
    private var serverHandshakeRecords = 0
    /// TLS 1.3: NewSessionTickets the server sent once it read the client's Finished, before the
    /// client wrote again (at most two, 100 to 400 bytes each).
    private var ticketsTaken = 0
    private var clientWroteAfterFinished = false
    /// 0-RTT records (the request sent with the ClientHello), estimated once the suite is known,
    /// at most 64.
    private var earlyRecords: [TLSRecordReader.Record] = []

    /// A client record before the ServerHello: 0-RTT data, kept (its length and times) until the
    /// suite says its overhead.
    mutating func early(_ r: TLSRecordReader.Record) {
        guard earlyRecords.count < 64 else { return }
        earlyRecords.append(TLSRecordReader.Record(type: TLSContentType.applicationData, body: nil, length: r.length,
                                                   firstByte: r.firstByte, lastByte: r.lastByte, lost: r.lost))
    }

    /// The ServerHello named the suite: its records' overhead. Returns the 0-RTT records kept,
    /// the first exchange's request, to be estimated now.
    mutating func suiteKnown(overhead: Int) -> [TLSRecordReader.Record] {
        pattern.overhead = overhead
        defer { earlyRecords = [] }
        return earlyRecords
    }

    /// A client application-data record after the ServerHello.
    mutating func client(_ r: TLSRecordReader.Record, tls13: Bool, earlyDataOffered: Bool) -> ClientRole {
        if tls13, clientFinishedAt == nil {
            // After 0-RTT the client's EndOfEarlyData (an empty handshake message) comes first;
            // its Finished is the next.
            if !(earlyDataOffered && r.length - pattern.overhead == 4) { clientFinishedAt = r.lastByte }
            return .handshake
        }
        if clientFinishedAt != nil { clientWroteAfterFinished = true }
        return .data(withFinished: clientFinishedAt.map { r.firstByte.nanoseconds - $0.nanoseconds < 1_000_000 } ?? false)
    }

    /// A server application-data record. `finishedLength`: the suite's Finished message (4 +
    /// its hash length), nil when the suite is not one icy-sniff knows.
    mutating func server(_ r: TLSRecordReader.Record, tls13: Bool, finishedLength: Int?) -> ServerRole {
        // TLS 1.3: before the client's Finished, the server's encrypted handshake, up to its
        // Finished (not its first record, which is EncryptedExtensions); then 0.5-RTT data.
        if tls13, clientFinishedAt != nil, !clientWroteAfterFinished, ticketsTaken < 2,
           RecordPattern.ticketLengths.contains(r.length - pattern.overhead) {
            ticketsTaken += 1
            return .ticket
        }
        if !tls13 || clientFinishedAt != nil || serverFinishedSeen { return .data }
        if serverHandshakeRecords > 0, let finishedLength, r.length - pattern.overhead == finishedLength { serverFinishedSeen = true }
        serverHandshakeRecords += 1
        return .handshake
    }

    /// An application-data record for the estimates. Returns how many exchanges the pattern now
    /// keeps beyond what it kept before (for the connection's state budget).
    mutating func estimate(_ r: TLSRecordReader.Record, fromClient: Bool, withFinished: Bool = false) -> Int {
        let kept = pattern.kept
        pattern.record(fromClient: fromClient, length: r.length, first: r.firstByte, last: r.lastByte, withFinished: withFinished, lost: r.lost)
        return pattern.kept - kept
    }

    mutating func inferred(offered: [String]?, negotiated: String?) -> InferredTraffic? {
        pattern.result(offered: offered, negotiated: negotiated)
    }
}
