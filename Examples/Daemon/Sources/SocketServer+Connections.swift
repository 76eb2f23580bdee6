import CSystemd
import Glibc
import Logging
import LongThreads

/// daemon.io: reading a connection's requests, sending its replies, and backpressure between
/// the two.
///
/// A connection is read only while ``Connection/mayRead``: it has a batch slot (at most
/// ``ClientLimits/batchesInFlight`` on the journal thread), its unsent replies are under the
/// high watermark (or fell back to the low one since), it has parsed all it read, and its read
/// fits in the total. Whatever event woke the source, nothing is read otherwise.
extension SocketServer {
    /// The connection's one source fired: replies out first (room in the client's socket), then
    /// requests in, if the connection may take more.
    func ready(_ connection: Connection, _ events: DescriptorEvents) {
        if events.contains(.hangUp), !connection.hungUp {
            connection.peerClosed()
            recount(connection)
        }
        if events.contains(.writable) || !connection.reading { flush(connection) }
        guard isLive(connection) else { return }
        if connection.mayRead { readReady(connection) }
        guard isLive(connection) else { return }
        if !events.isDisjoint(with: [.hangUp, .error]), !connection.mayRead { return holdHungUp(connection) }
        updateEvents(connection)
    }

    /// The client hung up (or its socket failed) while it may not be read. Hang-up is
    /// level-triggered and reported whatever the source waits for: left watched, the source
    /// would fire on every pass until the batches come back, a busy loop. The source goes; the
    /// rest of what the client sent is read once it may be (``updateEvents(_:)``), and stored.
    private func holdHungUp(_ connection: Connection) {
        connection.source?.cancel()
        connection.source = nil
    }

    /// Reads a hung-up client again from a queued item rather than from inside the caller (which
    /// may be a read's own bookkeeping), one read at a time.
    private func queueHungUpRead(_ connection: Connection) {
        guard !connection.readQueued else { return }
        connection.readQueued = true
        do {
            try io.perform { [self] in
                connection.readQueued = false
                if isLive(connection) { ready(connection, .hangUp) }
            }
        } catch {
            drop(connection) // daemon.io is stopping: its connections go with it
        }
    }

    func isLive(_ connection: Connection) -> Bool { connections[connection.fd] === connection }

    private func readReady(_ connection: Connection) {
        guard makeRoom(ClientLimits.readSize, for: connection) else { return }
        var buffer = [UInt8](repeating: 0, count: ClientLimits.readSize)
        let n = read(connection.fd, &buffer, buffer.count)
        if n < 0 {
            if errno == EAGAIN || errno == EINTR { return }
            drop(connection)
            return
        }
        if n == 0 { // the client closed its side: answer what it sent, then close
            stopReading(connection)
            closeIfDone(connection)
            return
        }
        connection.unparsed = buffer[0..<n]
        recount(connection)
        submitBatches(connection)
    }

    /// Parses what was read into batches of at most ``ClientLimits/batchRequests`` requests and
    /// hands them to the journal, while the connection has batch slots, is under its high
    /// watermark, and the total has room for each batch's reserve.
    func submitBatches(_ connection: Connection) {
        while isLive(connection), connection.mayParse, makeRoom(Self.batchReserve(connection.unparsed), for: connection) {
            let (batch, consumed) = connection.lines.feed(connection.unparsed, maximumRequests: ClientLimits.batchRequests)
            connection.unparsed = connection.unparsed.dropFirst(consumed)
            if connection.unparsed.isEmpty || connection.lines.isEndless { connection.unparsed = [] } // frees the read's buffer
            noteLineProgress(connection, completedRequests: !batch.isEmpty)
            if !batch.isEmpty { submit(batch, reserving: consumed + batch.count * ClientLimits.bytesPerRequest, for: connection) }
            recount(connection)
            if connection.lines.isEndless { return cutEndlessLine(connection) }
        }
        updateEvents(connection)
    }

    /// What the next batch from `unparsed` reserves at most, counted before it is parsed: the
    /// bytes up to its last line feed, and a request for each line feed, up to
    /// ``ClientLimits/batchRequests``, and one for a line cut as too long.
    static func batchReserve(_ unparsed: ArraySlice<UInt8>) -> Int {
        var requests = 1, bytes = unparsed.count
        for index in unparsed.indices where unparsed[index] == UInt8(ascii: "\n") {
            requests += 1
            if requests > ClientLimits.batchRequests {
                bytes = index + 1 - unparsed.startIndex
                break
            }
        }
        return bytes + requests * ClientLimits.bytesPerRequest
    }

    /// A complete request is activity; bytes of a line not ended are not: its clock starts at
    /// its first byte (``ClientLimits/requestTimeout``).
    private func noteLineProgress(_ connection: Connection, completedRequests: Bool) {
        let now = io.now
        if completedRequests {
            connection.lastActivity = now
            connection.lineStarted = connection.lines.hasPartialLine ? now : nil
        } else if connection.lines.hasPartialLine, connection.lineStarted == nil {
            connection.lineStarted = now
        }
        scheduleDeadlineCheck(for: connection)
    }

    private func submit(_ batch: [Result<DaemonRequest, DaemonReplyError>], reserving reserve: Int, for connection: Connection) {
        connection.outstanding += 1
        connection.inFlightBytes += reserve
        logger.trace("batch submitted", metadata: [
            "client.fd": "\(connection.fd)", "batch.requests": "\(batch.count)",
            "batches.in.flight": "\(connection.outstanding)", "total.bytes": "\(totalHeld + reserve)",
        ])
        do {
            try journal.submit(batch) { [self] replies in
                // Journal thread -> daemon.io: replies are written in the order batches ran.
                // Refused only once daemon.io stops, which a shutdown does after every client
                // was answered or cut: nobody is left to answer.
                try? io.perform { [self] in answered(connection, replies, reserve: reserve) }
            }
        } catch {
            deliver(batch.map { _ in DaemonReplyError.shuttingDown.reply }, to: connection, reserve: reserve)
        }
    }

    /// An endless line: the client is answered what it is owed (its `ERR …too long` included)
    /// and closed; nothing more is read from it.
    private func cutEndlessLine(_ connection: Connection) {
        logger.warning("client cut: a request line ran on without a newline", metadata: [
            "client.fd": "\(connection.fd)", "limit.bytes": "\(LineSplitter.maximumSkippedBytes)",
        ])
        stopReading(connection)
        closeIfDone(connection)
    }

    /// A batch's replies are back from the journal: queued and sent; its slot may take the next
    /// batch of what was read.
    private func answered(_ connection: Connection, _ replies: [String], reserve: Int) {
        deliver(replies, to: connection, reserve: reserve)
        guard isLive(connection) else { return }
        submitBatches(connection)
        closeIfDone(connection)
    }

    /// Queues a batch's replies in place of its reserve, and sends what the socket takes.
    private func deliver(_ replies: [String], to connection: Connection, reserve: Int) {
        connection.outstanding -= 1
        connection.inFlightBytes -= reserve
        guard isLive(connection) else {
            // Cut or gone meanwhile: these replies are dropped. The last batch in flight lets the
            // connection go: what its batches allocated on the journal thread is free from now.
            recount(connection)
            if connection.outstanding == 0 { scheduleTrim() }
            wakeWaitingForRoom()
            return
        }
        // The daemon was busy, not the client: its idle time starts once it has all its answers.
        if connection.outstanding == 0 { connection.lastActivity = io.now }
        if connection.unsent == 0 { connection.lastSendProgress = io.now }
        connection.queue(replies)
        recount(connection)
        wakeWaitingForRoom() // the replies took less than their reserve
        flush(connection)
        if isLive(connection) { scheduleDeadlineCheck(for: connection) }
    }

    /// Sends what the client's socket takes; waits for writable (on the connection's one
    /// source) while replies remain, and stops waiting once they are all sent. Past the high
    /// watermark the connection stops being read; down to the low one, it is read again.
    func flush(_ connection: Connection) {
        var sentAny = false
        while connection.unsent > 0 {
            let n = connection.send()
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN { break } // the client reads slowly: wait until its socket takes more
                drop(connection) // EPIPE, ECONNRESET: the client is gone
                return
            }
            sentAny = true
        }
        if sentAny {
            connection.lastActivity = io.now
            connection.lastSendProgress = io.now
            recount(connection)
            wakeWaitingForRoom()
        }
        if connection.unsent > limits.replyBufferBytes {
            connection.pausedForReplies = true
        } else if connection.pausedForReplies, connection.unsent <= limits.lowWatermark {
            connection.pausedForReplies = false
            submitBatches(connection) // what was read before the pause
        }
        updateEvents(connection)
        closeIfDone(connection)
    }

    /// Makes the connection's source wait for what it needs now (``Connection/wantedEvents``).
    func updateEvents(_ connection: Connection) {
        guard isLive(connection) else { return }
        guard let source = connection.source else {
            if connection.mayRead { queueHungUpRead(connection) }
            return
        }
        let wanted = connection.wantedEvents, current = source.events
        do {
            if !wanted.subtracting(current).isEmpty { try source.enable(wanted.subtracting(current)) }
            if !current.subtracting(wanted).isEmpty { try source.disable(current.subtracting(wanted)) }
        } catch {
            logger.error("client cut: its source refused a change", metadata: ["client.fd": "\(connection.fd)", "error": "\(error)"])
            drop(connection)
        }
    }

    func stopReading(_ connection: Connection) {
        connection.reading = false
        updateEvents(connection)
    }

    /// Closes a connection that reads no more once it is owed nothing: no batch in flight, no
    /// request read and not answered, no reply unsent.
    func closeIfDone(_ connection: Connection) {
        if !connection.reading, connection.outstanding == 0, connection.unsent == 0,
           connection.unparsed.isEmpty || connection.lines.isEndless {
            drop(connection)
        }
    }

    func cut(_ connection: Connection, _ message: Logger.Message, _ metadata: Logger.Metadata = [:]) {
        logger.warning(message, metadata: metadata.merging([
            "client.fd": "\(connection.fd)", "unsent.bytes": "\(connection.unsent)",
            "held.bytes": "\(connection.heldBytes)", "total.bytes": "\(totalHeld)",
        ]) { mine, _ in mine })
        drop(connection)
    }

    func drop(_ connection: Connection) {
        guard isLive(connection) else { return }
        connections[connection.fd] = nil
        waitingForRoom.remove(connection.fd)
        connection.reading = false
        let released = connection.releasableBytes
        // Freed before the trim: the connection itself may outlive the drop (its source's
        // handler, batches in flight), and its buffers with it.
        connection.discardBuffers()
        recount(connection)
        if released > 65536 { scheduleTrim() }
        connection.source?.cancel()
        connection.source = nil
        close(connection.fd) // after cancelling its source, as DescriptorSource asks
        if connections.count < limits.maximumClients { loggedClientLimit = false }
        resumeAccepting() // a descriptor is free
        wakeWaitingForRoom()
        if connections.isEmpty {
            cancelDeadlineCheck()
            if !accepting { finishShutdown() }
        }
    }

    /// Gives the memory of freed reply buffers back to the system, once for the drops of the
    /// next moment. glibc keeps freed memory in the arena of the thread that allocated it
    /// (replies are built on the journal thread), so without a trim a daemon that queued 300
    /// clients' replies keeps that memory after they leave.
    func scheduleTrim() {
        guard trimTimer == nil else { return }
        do {
            trimTimer = try io.perform(after: .milliseconds(100)) { [self] in
                trimTimer = nil
                _ = malloc_trim(0)
            }
        } catch {
            // Only a stopping thread refuses the timer; the process ends soon.
        }
    }
}
