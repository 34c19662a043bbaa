/// A transport's table of open connections, as the pipeline drives it between packets: TCP's
/// `ConnectionTable` and QUIC's `QUICTracker` (Zeek's session managers per transport). Each
/// owns its connections' transport state and its own idle limit; the pipeline feeds each its
/// packets (segments, datagrams) and asks all of them the same things: end the idle ones, end
/// them all at a break or the end, count and list the open ones.
protocol TransportTable: AnyObject {
    var openConnections: Int { get }
    /// Every open connection the table would report (for the live `--stats` line).
    func forEachOpen(_ body: (Connection) -> Void)
    /// Ends the connections idle for longer than `idleLongerThan` nanoseconds of capture time
    /// (nil: the table's own limit).
    func expire(now: Timestamp, idleLongerThan: Int64?)
    /// Ends every open connection, each flagged `weird` when given (a capture set's break).
    func flushAll(at timestamp: Timestamp, marking weird: Weird?)
}

extension ConnectionTable: TransportTable {}
extension QUICTracker: TransportTable {}
