/// Ending connections the table no longer keeps: past its caps (connections, waiting state), idle
/// past the limits, or all of them at the end of the capture.
extension ConnectionTable {
    /// The waiting state of all connections is over its budget: the longest idle connections
    /// are ended, flagged, until a quarter of the budget is free (one sort per round, so the
    /// rounds are rare). Called after a segment was handled.
    func evictOverBudget(now: Timestamp) {
        let target = budget.limit * 3 / 4
        endLongestIdle(now: now, marking: .stateBudgetExceeded) { budget.used > target }
    }

    func evictIdle(now: Timestamp, keep: Int) {
        endLongestIdle(now: now, marking: .connectionEvicted) { flows.count > keep }
    }

    /// Ends the longest idle connections, each flagged `weird`, while `more` says so: the one
    /// eviction of both caps (connections, waiting state).
    private func endLongestIdle(now: Timestamp, marking weird: Weird, while more: () -> Bool) {
        let sorted = flows.sorted { $0.value.connection.times.last < $1.value.connection.times.last }
        for (key, flow) in sorted {
            guard more() else { break }
            flow.connection.note(weird)
            finish(flow, key: key, at: now)
        }
    }

    /// Flushes connections idle past the limits (capture clock): `idleLongerThan` (default
    /// `idleTimeout`) for all, `halfOpenTimeout` for those that never carried data.
    public func expire(now: Timestamp, idleLongerThan: Int64? = nil) {
        let idleLimit = idleLongerThan ?? limits.idleTimeout
        var expired: [(ConnectionKey, Flow)] = []
        for (key, flow) in flows {
            let idle = now.nanoseconds - flow.connection.times.last.nanoseconds
            let t = flow.tcp
            let empty = !t.deliveredBytes && t.halves.0.pending.isEmpty && t.halves.1.pending.isEmpty
            if idle > idleLimit || (empty && idle > limits.halfOpenTimeout) { expired.append((key, flow)) }
        }
        expired.sort { $0.1.connection.id < $1.1.connection.id }
        for (key, flow) in expired {
            if flow.tcp.deliveredBytes { flow.connection.note(.connectionEvicted) }
            finish(flow, key: key, at: now)
        }
        retired.removeAll(keepingCapacity: true)
    }

    /// Ends every connection (end of capture), in the order they started.
    public func flushAll(at timestamp: Timestamp, marking weird: Weird? = nil) {
        let all = flows.sorted { $0.value.connection.id < $1.value.connection.id }
        for (key, flow) in all {
            if let weird { flow.connection.note(weird) }
            finish(flow, key: key, at: max(timestamp, flow.connection.times.last))
        }
        retired.removeAll(keepingCapacity: true)
    }
}
