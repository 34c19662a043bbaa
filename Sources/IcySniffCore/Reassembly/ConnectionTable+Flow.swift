extension ConnectionTable {
    /// One connection in the table: its record and, once it carries data, its handler.
    final class Flow {
        let connection: Connection
        /// The connection's TCP adapter (the table makes only TCP connections), held here too so
        /// the per-packet path reaches the halves without asking the connection.
        let tcp: TCPAdapter
        /// Made when the connection first carries data, then never replaced.
        private(set) var handler: Handler?
        /// `handler` again, unretained, for the per-packet path.
        private(set) var unretainedHandler: Unmanaged<Handler>?
        #if DEBUG
        /// Set when the connection is finished: an unretained use after that is a bug.
        var isFinished = false
        #endif
        init(connection: Connection, tcp: TCPAdapter) {
            self.connection = connection
            self.tcp = tcp
        }

        @inline(__always) func setHandler(_ h: Handler) {
            handler = h
            unretainedHandler = Unmanaged.passUnretained(h)
        }
    }
}
