/// One value for each direction of a connection: the one spelling of per-direction state (a
/// parser, a buffer, keys, a counter), subscripted by `Direction`.
///
/// Two stored properties rather than an array of two: no bounds check, no heap buffer, and a
/// value that holds a buffer (an array, a dictionary) is mutated through the subscript in place
/// (`_modify` yields the stored property itself; a `get`/`set` pair would copy it first and make
/// every append to a shared buffer O(n)).
public struct PerDirection<Value> {
    public var fromClient: Value
    public var fromServer: Value

    public init(fromClient: Value, fromServer: Value) {
        self.fromClient = fromClient
        self.fromServer = fromServer
    }

    /// The same starting value for both directions (a value type is copied; a class instance
    /// would be shared: give one per direction with `init(_ make:)`).
    public init(_ both: Value) {
        fromClient = both
        fromServer = both
    }

    /// A value made for each direction.
    public init(_ make: (Direction) -> Value) {
        fromClient = make(.fromClient)
        fromServer = make(.fromServer)
    }

    @inline(__always) public subscript(direction: Direction) -> Value {
        get { direction == .fromClient ? fromClient : fromServer }
        _modify {
            if direction == .fromClient { yield &fromClient } else { yield &fromServer }
        }
    }
}

extension PerDirection: Sendable where Value: Sendable {}
extension PerDirection: Equatable where Value: Equatable {}
