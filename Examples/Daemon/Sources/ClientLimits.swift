/// The bounds the socket server puts on each client, so that no client, slow or hostile, can
/// hold the daemon's memory, descriptors or shutdown without limit.
struct ClientLimits: Sendable, Equatable {
    /// A client that sends nothing and reads no reply for this long is closed; nil: never.
    /// A client waiting for a reply the journal has not produced yet is not idle.
    var idleTimeout: Duration?
    /// A client whose replies waiting to be sent exceed this many bytes is cut: it is not
    /// reading them, and they would otherwise queue without limit.
    var replyBufferBytes: Int
    /// After a shutdown began, clients whose replies are still unsent after this long are cut.
    var shutdownDeadline: Duration
}
