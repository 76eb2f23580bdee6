import Logging

/// daemon.io: the memory held for all clients together, counted where it is taken and checked
/// before it is taken (``ClientLimits/totalReplyBufferBytes``).
///
/// The total is shared: a read (``ClientLimits/readSize``) or a batch (its reserve) that would
/// take it past the limit, for a client holding less than its share (the limit over the number
/// of clients), first cuts the clients holding the most among those whose replies wait (their
/// socket is full: they do not keep up with them), largest first. So a crowd that never reads
/// cannot starve a client that does. Otherwise the client waits (it is not read) until
/// memory is given back. The client being read is never cut for it.
extension SocketServer {
    /// Brings the total up to date with what `connection` holds now.
    func recount(_ connection: Connection) {
        let held = connection.heldBytes
        totalHeld += held - connection.counted
        connection.counted = held
    }

    /// Whether `bytes` more fit in the total for `connection`, after cutting the clients holding
    /// the most while it holds less than its share. If not, `connection` waits for room.
    ///
    /// "Holding the most" is what a cut gives back at once (``Connection/releasableBytes``): a
    /// client's batches in flight stay counted until they come back, so cutting it for them
    /// would cut many clients to free little.
    func makeRoom(_ bytes: Int, for connection: Connection) -> Bool {
        let needed = totalHeld + bytes - limits.totalReplyBufferBytes
        guard needed > 0 else { return true }
        let share = limits.totalReplyBufferBytes / max(connections.count, 1)
        var victims: [Connection] = []
        var freed = 0
        if connection.heldBytes < share {
            let larger = connections.values.filter {
                $0 !== connection && $0.unsent > 0 && $0.releasableBytes > connection.heldBytes
            }
            for candidate in larger.sorted(by: { $0.releasableBytes > $1.releasableBytes }) where freed < needed {
                victims.append(candidate)
                freed += candidate.releasableBytes
            }
        }
        guard freed >= needed else {
            connection.waitingForRoom = true
            waitingForRoom.insert(connection.fd)
            updateEvents(connection)
            return false
        }
        for victim in victims {
            cut(victim, "client cut: the memory held for all clients reached the total limit, and it held the most", [
                "limit.bytes": "\(limits.totalReplyBufferBytes)", "for.client.fd": "\(connection.fd)",
            ])
        }
        return true
    }

    /// Memory was given back: clients waiting for room are read again (each checks again).
    func wakeWaitingForRoom() {
        guard !waitingForRoom.isEmpty, totalHeld + ClientLimits.readSize <= limits.totalReplyBufferBytes else { return }
        let waiting = waitingForRoom
        waitingForRoom = []
        for fd in waiting {
            guard let connection = connections[fd] else { continue }
            connection.waitingForRoom = false
            if connection.mayParse { submitBatches(connection) }
            updateEvents(connection)
        }
    }
}
