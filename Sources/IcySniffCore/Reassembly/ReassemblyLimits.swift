/// Limits that keep reassembly memory bounded.
public struct ReassemblyLimits: Sendable {
    /// Out-of-order bytes buffered per direction before the first hole is declared a gap.
    public var maxBufferedBytesPerDirection = 4 << 20
    /// A segment further than this beyond the next expected byte is ignored as out of window.
    public var maxWindow: UInt64 = 1 << 30
    /// Idle time (capture clock) after which a connection is flushed, for files and live alike.
    public var idleTimeout: Int64 = 300_000_000_000
    /// Idle time after which a connection that never carried data (a lone SYN) is dropped.
    public var halfOpenTimeout: Int64 = 30_000_000_000
    /// Connections kept at once; past this the longest idle quarter is flushed, flagged
    /// `connection_evicted` (a flood of connections cannot grow memory without bound: about
    /// 1 KiB per bare connection, 5 KiB with a request waiting, so 8,192 stay within about
    /// 40 MiB; 131,072 let 100,000 unanswered requests take 431 MiB). `--max-connections`.
    public var maxConnections = 1 << 13
    /// Bytes of waiting HTTP state of all connections together (`StateBudget`).
    public var stateBudget = 32 << 20
    public init() {}
}

/// Ports on which the server side of a connection is assumed when nothing else tells.
let wellKnownServerPorts: Set<UInt16> = [80, 8080, 8000, 8008, 8888, 3128, 8081, 591, 443]
