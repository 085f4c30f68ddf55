# cython: language_level=3, boundscheck=False, wraparound=False
"""gRPC's HTTP/2 framing on nghttp2, driven by one epoll loop thread (see h2_server.py).

Why C here: a gRPC server on grpcio's core spends several times the CPU on an empty
unary call with this project's client that nghttp2, a C HTTP/2 library, spends on
the same exchange (figures in docs/p4runtime.md). This module is only the wire: connections,
HTTP/2 sessions, gRPC's 5-byte message framing, compression of requests, status
trailers. What a call means (its handler, its thread) is h2_server's, which this
loop calls back on its own thread:

    server.on_headers(stream)        the request's headers are in (stream.method, .metadata)
    server.on_message(stream, data)  one whole request message (decompressed); True when
                                     taken at once, False when queued for a handler's thread,
                                     which calls stream.taken() as it takes each one
    server.on_half_close(stream)     the client sent its last message
    server.on_closed(stream)         the stream is over (answered, reset, or its connection gone)

``Stream.send`` and ``Stream.finish`` may be called from any thread: on the loop's own
thread they go straight to nghttp2, from another they are queued for the loop and the
sender waits while the stream has more than the pending limit not yet taken by
nghttp2 (so a large Read does not pile up in memory), for at most the stall time (then
the stream is reset). ``Stream.when_drained`` is the same wait without a thread: the
loop calls back once the client has taken enough. Only the loop thread touches
nghttp2 sessions and sockets.

What a client may use is bounded (``limits.ServerLimits``): the decoded header list
(counted before anything is copied), the request message (after decompression),
streams per connection, connections, answer bytes waiting per stream and how long
they may wait; ``grpc-timeout`` ends a call at its deadline. nghttp2 itself bounds
CONTINUATION frames per header block, SETTINGS and PING frames waiting for their
acknowledgement and the rate of stream resets (rapid reset), closing a connection
past them.

Flow control of requests: the connection's window is given back as bytes arrive; a
stream's only as its messages are taken, so a client cannot queue much more than the
stream window (``STREAM_WINDOW``) plus one message that its handler has not read.
"""

import base64
import collections
import heapq
import logging
import os
import threading
import time
import zlib

from cpython.bytearray cimport PyByteArray_AS_STRING
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.pythread cimport PyThread_get_thread_ident
from libc.errno cimport EAGAIN, EINTR, EMFILE, ENFILE, ENOBUFS, ENOMEM, errno
from libc.stdint cimport int32_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy

from h2_decls cimport *  # the POSIX and nghttp2 declarations, beside this file

log = logging.getLogger("p4target.accel.h2_loop")

cdef enum:
    # grpc_status_code values this module answers with itself
    DEADLINE_EXCEEDED = 4
    RESOURCE_EXHAUSTED = 8
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    # commands from other threads
    SEND = 1
    FINISH = 2
    STOP_LISTENING = 3
    CANCEL_ALL = 4
    TAKEN = 5
    PARK = 6
    RESET = 7
    # timers
    DEADLINE = 1
    STALL = 2

cdef enum:
    RECV_CHUNK = 262144
    WRITE_HIGH = 1048576       # stop taking frames from nghttp2 while this much waits for the socket
    STREAM_WINDOW = 1048576    # what a client may send on one stream before we consume it
    CONNECTION_WINDOW = 16777216
    HEADER_ENTRY_OVERHEAD = 32  # what HTTP/2 adds to name + value when it sizes a header list

cdef class Conn
cdef class Loop

cdef bytes _STATUS_200 = b"200"
cdef bytes _GRPC_TYPE = b"application/grpc"
cdef bytes _ACCEPT = b"identity,deflate,gzip"
cdef frozenset _ENCODINGS = frozenset((b"", b"identity", b"deflate", b"gzip"))
cdef bytes _POST = b"POST"
cdef tuple _HEADERS = ((b":status", _STATUS_200), (b"content-type", _GRPC_TYPE),
                       (b"grpc-accept-encoding", _ACCEPT))
# request headers that are gRPC's or HTTP's own, not the call's metadata
cdef frozenset _RESERVED = frozenset((b"content-type", b"te", b"grpc-timeout", b"grpc-encoding",
                                      b"grpc-accept-encoding", b"grpc-message-type", b"user-agent"))

def percent_encoded(bytes details):
    """grpc-message as gRPC's HTTP/2 mapping writes it: printable ASCII but '%' as is."""
    cdef unsigned char c
    cdef bint plain = True
    for c in details:
        if c < 0x20 or c > 0x7e or c == 0x25:
            plain = False
            break
    if plain:
        return details
    out = bytearray()
    for c in details:
        if c < 0x20 or c > 0x7e or c == 0x25:
            out += b"%%%02X" % c
        else:
            out.append(c)
    return bytes(out)


cdef dict _TIMEOUT_UNIT_NS = {0x6e: 1, 0x75: 1000, 0x6d: 1000000, 0x53: 1000000000, 0x4d: 60000000000,
                              0x48: 3600000000000}


def timeout_ns(bytes value):
    """grpc-timeout (1 to 8 digits and a unit: H M S m u n) in nanoseconds; -1 when it
    is not one (the call then has no deadline, as grpc does with a malformed one)."""
    if not 2 <= len(value) <= 9 or not value[:-1].isdigit():
        return -1
    unit = _TIMEOUT_UNIT_NS.get(value[len(value) - 1])
    if unit is None:
        return -1
    return min(int(value[:-1]) * unit, 1 << 62)  # 99999999H is past 64 bits: 146 years is as good


cdef bytes _KEY_CHARS = b"0123456789abcdefghijklmnopqrstuvwxyz_.-"
# gRPC's own trailers, which a handler may not set (grpc-status-details-bin it may:
# that is how a rich status travels)
cdef frozenset _OWN_TRAILERS = frozenset((b"grpc-status", b"grpc-message"))


def metadata_pairs(trailing):
    """(name, value) bytes of a call's trailing metadata; ``-bin`` values in base64.
    ValueError for a key or value HTTP/2 (gRPC's mapping of it) cannot carry."""
    out = []
    for key, value in trailing or ():
        name = key.lower().encode("ascii")
        if not name or name.translate(None, _KEY_CHARS) or name in _OWN_TRAILERS:
            raise ValueError(f"metadata key {key!r} is not allowed (0-9 a-z _ . - only, not grpc-status "
                             "or grpc-message)")
        if name.endswith(b"-bin"):
            out.append((name, base64.b64encode(value if isinstance(value, bytes) else value.encode())))
            continue
        data = value.encode("ascii") if isinstance(value, str) else bytes(value)
        if any(c < 0x20 or c > 0x7e for c in data):
            raise ValueError(f"metadata value of {key!r} is not printable ASCII; use a -bin key for bytes")
        out.append((name, data))
    return out


cdef object _inflate(bytes encoding, bytes data, Py_ssize_t most):
    """A compressed request message, inflated to at most ``most`` + 1 bytes (a small
    request that would inflate to gigabytes stops there: the caller refuses it as too
    large); raise ValueError or zlib.error with what was wrong."""
    if encoding == b"gzip":
        inflater = zlib.decompressobj(31)
    elif encoding == b"deflate":
        inflater = zlib.decompressobj()
    else:
        raise ValueError(f"compressed message with grpc-encoding {encoding.decode(errors='replace')!r}")
    out = inflater.decompress(data, most + 1)
    if len(out) <= most and not inflater.eof:
        raise ValueError("the compressed message is truncated")
    return out


cdef inline Py_ssize_t _prefix_length(const uint8_t *p) noexcept:
    """The message length of gRPC's 5-byte prefix: 32 bits unsigned, 0 to 4 GiB - 1
    (assembled in a 64-bit integer: in a C int a top bit set would make it negative)."""
    return (<Py_ssize_t>p[1] << 24) | (<Py_ssize_t>p[2] << 16) | (<Py_ssize_t>p[3] << 8) | <Py_ssize_t>p[4]


cdef nghttp2_nv *_nv(list pairs):
    """An nghttp2_nv array pointing into ``pairs`` (bytes, kept alive by the caller; nghttp2
    copies them when the frame is submitted). Free with free()."""
    cdef nghttp2_nv *nva = <nghttp2_nv *>malloc(sizeof(nghttp2_nv) * (len(pairs) or 1))
    cdef Py_ssize_t i
    cdef bytes name, value
    for i in range(len(pairs)):
        name, value = pairs[i]
        nva[i].name = <uint8_t *>PyBytes_AS_STRING(name)
        nva[i].namelen = PyBytes_GET_SIZE(name)
        nva[i].value = <uint8_t *>PyBytes_AS_STRING(value)
        nva[i].valuelen = PyBytes_GET_SIZE(value)
        nva[i].flags = NGHTTP2_NV_FLAG_NONE
    return nva


cdef class Stream:
    """One call (an HTTP/2 stream) as the server layer sees it."""

    cdef readonly bytes method
    cdef readonly object metadata_list
    cdef public object call           # the server layer's state for this call
    cdef Conn conn
    cdef int32_t sid
    cdef bytes encoding
    cdef bytes content_type
    cdef bytearray buf               # request bytes of an incomplete message
    cdef object out                  # framed response messages not yet taken by nghttp2
    cdef Py_ssize_t off              # how much of out[0] nghttp2 has taken
    cdef public Py_ssize_t pending   # bytes queued (by any thread) and not yet taken
    cdef object room                 # threading.Condition a sender from another thread waits on
    cdef bint waiting
    cdef list trailers
    cdef readonly bint responded, finished, closed, half_closed
    cdef bint deferred, rejected
    cdef Py_ssize_t inflight         # request bytes received and not yet given back to the stream window
    cdef Py_ssize_t held_bytes       # of which: messages queued for a handler's thread
    cdef object held                 # the wire size of each of those messages, oldest first
    cdef bytes http_method
    cdef bytes http_status           # of a refusal that is not a gRPC call (None: 200)
    cdef Py_ssize_t header_bytes     # decoded size of the request's header list so far
    cdef long long deadline_ns       # grpc-timeout, relative (-1: none)
    cdef object resume               # when_drained's callback while the stream is over its limit
    cdef long park_seq

    @property
    def metadata(self):
        return tuple(self.metadata_list)

    def send(self, bytes data):
        """Queue one response message (serialised, unframed)."""
        cdef Py_ssize_t n = PyBytes_GET_SIZE(data)
        cdef bytes framed = PyBytes_FromStringAndSize(NULL, n + 5)
        cdef char *p = PyBytes_AS_STRING(framed)
        cdef Loop loop = self.conn.loop
        p[0] = 0
        p[1] = <char>((n >> 24) & 0xff)
        p[2] = <char>((n >> 16) & 0xff)
        p[3] = <char>((n >> 8) & 0xff)
        p[4] = <char>(n & 0xff)
        memcpy(p + 5, PyBytes_AS_STRING(data), n)
        if PyThread_get_thread_ident() == loop.ident:
            self.pending += n + 5
            self._enqueue(framed)
            return
        if self.pending > loop.pending_limit:  # what is queued already must drain (not this message: it may be larger)
            if self.room is None:
                self.room = threading.Condition()
            end = time.monotonic() + loop.stall_s
            with self.room:
                self.waiting = True
                while self.pending > loop.pending_limit and not self.closed:
                    left = end - time.monotonic()
                    if left <= 0:  # the client takes nothing: the call ends here
                        loop.post((RESET, self, None))
                        break
                    self.room.wait(min(left, 1.0))
                self.waiting = False
        self.pending += n + 5
        loop.post((SEND, self, framed))

    def when_drained(self, callback):
        """From a handler's thread: call ``callback()`` (on the loop thread) as soon as
        this stream has no more than the pending limit waiting for its client, or is
        over; one that stays over the limit for the stall time is reset first. A
        handler that answers with many messages waits so without holding a thread."""
        self.conn.loop.post((PARK, self, callback))

    cdef void _park(self, callback):
        cdef Loop loop = self.conn.loop
        if self.closed or self.pending <= loop.pending_limit:
            loop.call(callback)
            return
        self.resume = callback
        self.park_seq += 1
        loop.add_timer(loop.stall_s, STALL, self, self.park_seq)

    cdef void _resume(self):
        callback, self.resume = self.resume, None
        self.conn.loop.call(callback)

    cdef void _reset(self, uint32_t code):
        if not self.closed:
            nghttp2_submit_rst_stream(self.conn.session, NGHTTP2_FLAG_NONE, self.sid, code)
            self.conn.loop.mark(self.conn)

    def taken(self):
        """A handler's thread took the oldest queued request message: its bytes may come again."""
        cdef Loop loop = self.conn.loop
        if PyThread_get_thread_ident() == loop.ident:
            self._taken()
        else:
            loop.post((TAKEN, self, None))

    cdef void _taken(self):
        if self.closed or not self.held:
            return
        self.held_bytes -= self.held.popleft()
        self._give_back()

    cdef void _give_back(self):
        """Give the stream window back for every received byte not held by a queued message."""
        cdef Py_ssize_t free_bytes = self.inflight - self.held_bytes
        if free_bytes > 0 and not self.closed:
            nghttp2_session_consume_stream(self.conn.session, self.sid, free_bytes)
            self.inflight -= free_bytes
            self.conn.loop.mark(self.conn)

    def finish(self, int code, bytes details, trailing=None):
        """End the call with this grpc status (and trailing metadata)."""
        cdef Loop loop = self.conn.loop
        if PyThread_get_thread_ident() == loop.ident:
            self._finish(code, details, trailing)
        else:
            loop.post((FINISH, self, (code, details, trailing)))

    cdef void _enqueue(self, bytes framed):
        if self.closed or self.finished:
            self.pending -= PyBytes_GET_SIZE(framed)
            return
        self.out.append(framed)
        self._respond_or_resume()

    cdef void _finish(self, int code, bytes details, trailing):
        if self.closed or self.finished:
            return
        self.finished = True
        try:
            extra = metadata_pairs(trailing)
        except (UnicodeError, TypeError, AttributeError, ValueError) as e:  # what HTTP/2 cannot carry
            log.error("%s: trailing metadata %r cannot be sent: %s", self.method, trailing, e)
            code, details, extra = INTERNAL, b"the handler set trailing metadata that cannot be sent", []
        pairs = [(b"grpc-status", str(code).encode())]
        if details:
            pairs.append((b"grpc-message", percent_encoded(details)))
        pairs.extend(extra)
        self.trailers = pairs
        if not self.responded and not self.out:   # trailers-only: one HEADERS frame ends the call
            self.responded = True
            head = list(_HEADERS)
            if self.http_status is not None:
                head[0] = (b":status", self.http_status)
            self.conn.submit_response(self.sid, head + pairs, None)
        else:
            self._respond_or_resume()

    cdef void _respond_or_resume(self):
        self.conn.loop.mark(self.conn)
        if not self.responded:
            self.responded = True
            self.conn.submit_response(self.sid, list(_HEADERS), self)
        elif self.deferred:
            self.deferred = False
            nghttp2_session_resume_data(self.conn.session, self.sid)

    cdef Py_ssize_t _take(self, uint8_t *dst, size_t length):
        """Copy up to ``length`` bytes of queued messages into nghttp2's frame buffer."""
        cdef Py_ssize_t copied = 0, avail, n
        cdef bytes chunk
        while copied < <Py_ssize_t>length and self.out:
            chunk = self.out[0]
            avail = PyBytes_GET_SIZE(chunk) - self.off
            n = min(avail, <Py_ssize_t>length - copied)
            memcpy(dst + copied, PyBytes_AS_STRING(chunk) + self.off, n)
            copied += n
            self.off += n
            if self.off == PyBytes_GET_SIZE(chunk):
                self.out.popleft()
                self.off = 0
        self.pending -= copied
        if self.pending <= self.conn.loop.pending_limit:
            if self.waiting:
                self._wake()
            if self.resume is not None:
                self._resume()
        return copied

    cdef void _wake(self):
        with self.room:
            self.room.notify_all()

    cdef void _closed(self):
        self.closed = True
        self.out.clear()
        if self.waiting:
            self._wake()
        if self.resume is not None:
            self._resume()


cdef Stream _new_stream(Conn conn, int32_t sid):
    cdef Stream st = Stream.__new__(Stream)
    st.conn = conn
    st.sid = sid
    st.method = b""
    st.metadata_list = []
    st.encoding = b""
    st.content_type = b""
    st.buf = bytearray()
    st.out = collections.deque()
    st.http_method = b""
    st.deadline_ns = -1
    return st


# ---- nghttp2 callbacks (called inside mem_recv/mem_send, on the loop thread, GIL held) ----

cdef int _on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user_data) noexcept:
    cdef Conn conn = <Conn>user_data
    if frame.hd.type == NGHTTP2_HEADERS and frame.headers.cat == NGHTTP2_HCAT_REQUEST:
        conn.streams[frame.hd.stream_id] = _new_stream(conn, frame.hd.stream_id)
        conn.loop.open_streams += 1
    return 0


cdef int _on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
                    const uint8_t *value, size_t valuelen, uint8_t flags, void *user_data) noexcept:
    cdef Conn conn = <Conn>user_data
    cdef Stream st = conn.streams.get(frame.hd.stream_id)
    if st is None or frame.headers.cat != NGHTTP2_HCAT_REQUEST:
        return 0
    # Counted before anything is copied: a header list past the limit (an HPACK bomb
    # refers to one large table entry many times) costs a sum per reference, no more.
    st.header_bytes += namelen + valuelen + HEADER_ENTRY_OVERHEAD
    if st.header_bytes > conn.loop.max_header_list:
        return 0
    cdef bytes key = (<char *>name)[:namelen]
    cdef bytes val = (<char *>value)[:valuelen]
    try:
        if key[0] == 0x3a:  # ':'
            if key == b":path":
                st.method = val
            elif key == b":method":
                st.http_method = val
        elif key == b"grpc-encoding":
            st.encoding = val
        elif key == b"content-type":
            st.content_type = val
        elif key == b"grpc-timeout":
            st.deadline_ns = timeout_ns(val)
        elif key not in _RESERVED:
            if key.endswith(b"-bin"):
                st.metadata_list.append((key.decode("ascii"), base64.b64decode(val + b"=" * (-len(val) % 4))))
            else:
                st.metadata_list.append((key.decode("ascii"), val.decode("latin-1")))
    except Exception:  # noqa: BLE001 - a header we cannot read is left out, not fatal
        log.debug("unreadable request header %r", key)
    return 0


cdef int _on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user_data) noexcept:
    cdef Conn conn = <Conn>user_data
    cdef Stream st
    if frame.hd.type != NGHTTP2_HEADERS and frame.hd.type != NGHTTP2_DATA:
        return 0
    st = conn.streams.get(frame.hd.stream_id)
    if st is None:
        return 0
    if frame.hd.type == NGHTTP2_HEADERS and frame.headers.cat == NGHTTP2_HCAT_REQUEST:
        conn.loop.headers_in(st)
    if frame.hd.flags & NGHTTP2_FLAG_END_STREAM:
        conn.loop.half_close(st)
    return 0


cdef int _on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t sid, const uint8_t *data, size_t n,
                        void *user_data) noexcept:
    cdef Conn conn = <Conn>user_data
    cdef Stream st = conn.streams.get(sid)
    nghttp2_session_consume_connection(session, n)  # the connection's window: always at once
    if st is None:
        return 0
    st.inflight += n
    if not (st.rejected or st.closed or st.finished):
        conn.loop.data_in(st, data, n)
    st._give_back()
    return 0


cdef int _on_stream_close(nghttp2_session *session, int32_t sid, uint32_t error_code, void *user_data) noexcept:
    cdef Conn conn = <Conn>user_data
    cdef Stream st = conn.streams.pop(sid, None)
    if st is not None:
        conn.loop.stream_over(st)
    return 0


cdef int _on_frame_send(nghttp2_session *session, const nghttp2_frame *frame, void *user_data) noexcept:
    # The answer is complete but the client still has its side open (a stream it has not
    # half-closed): reset with NO_ERROR, as HTTP/2 lets a server end a request it is done with.
    cdef Conn conn = <Conn>user_data
    cdef Stream st
    if frame.hd.type == NGHTTP2_HEADERS and frame.hd.flags & NGHTTP2_FLAG_END_STREAM:
        st = conn.streams.get(frame.hd.stream_id)
        if st is not None and not st.half_closed:
            nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame.hd.stream_id, NGHTTP2_NO_ERROR)
    return 0


cdef ssize_t _read_response(nghttp2_session *session, int32_t sid, uint8_t *buf, size_t length,
                            uint32_t *data_flags, nghttp2_data_source *source, void *user_data) noexcept:
    cdef Stream st = <Stream>source.ptr
    cdef Py_ssize_t copied = st._take(buf, length)
    cdef nghttp2_nv *nva
    if not st.out:
        if st.finished:
            data_flags[0] |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM
            nva = _nv(st.trailers)
            nghttp2_submit_trailer(session, sid, nva, len(st.trailers))
            free(nva)
        elif copied == 0:
            st.deferred = True
            return NGHTTP2_ERR_DEFERRED
    return copied


cdef nghttp2_session_callbacks *_callbacks = NULL
cdef nghttp2_option *_option = NULL


cdef nghttp2_option *_the_option():
    """Sessions give flow-control windows back only when told (``_give_back``)."""
    global _option
    if _option == NULL:
        nghttp2_option_new(&_option)
        nghttp2_option_set_no_auto_window_update(_option, 1)
    return _option


cdef nghttp2_session_callbacks *_the_callbacks():
    global _callbacks
    if _callbacks == NULL:
        nghttp2_session_callbacks_new(&_callbacks)
        nghttp2_session_callbacks_set_on_begin_headers_callback(_callbacks, _on_begin_headers)
        nghttp2_session_callbacks_set_on_header_callback(_callbacks, _on_header)
        nghttp2_session_callbacks_set_on_frame_recv_callback(_callbacks, _on_frame_recv)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(_callbacks, _on_data_chunk)
        nghttp2_session_callbacks_set_on_stream_close_callback(_callbacks, _on_stream_close)
        nghttp2_session_callbacks_set_on_frame_send_callback(_callbacks, _on_frame_send)
    return _callbacks


cdef class Conn:
    """One client connection: its socket, its nghttp2 session, its open streams."""

    cdef int fd
    cdef nghttp2_session *session
    cdef dict streams
    cdef Loop loop
    cdef char *wbuf          # bytes nghttp2 produced that the socket has not taken yet
    cdef size_t wlen, woff, wcap
    cdef bint want_out, dirty, dead

    cdef void submit_response(self, int32_t sid, list pairs, Stream body):
        cdef nghttp2_data_provider provider
        cdef nghttp2_nv *nva = _nv(pairs)
        cdef int rc
        if body is None:
            rc = nghttp2_submit_response(self.session, sid, nva, len(pairs), NULL)
        else:
            provider.source.ptr = <void *>body
            provider.read_callback = _read_response
            rc = nghttp2_submit_response(self.session, sid, nva, len(pairs), &provider)
        free(nva)
        if rc != 0:
            log.debug("stream %d: response not submitted: %s", sid, nghttp2_strerror(rc).decode())

    cdef bint _write_out(self):
        """Write what is buffered; False when the socket is full (or broken)."""
        cdef ssize_t n
        while self.woff < self.wlen:
            with nogil:
                n = send(self.fd, self.wbuf + self.woff, self.wlen - self.woff, MSG_NOSIGNAL)
            if n < 0:
                if errno == EINTR:
                    continue
                if errno != EAGAIN:
                    self.dead = True
                return False
            self.woff += n
        self.wlen = self.woff = 0
        return True

    cdef void flush(self):
        """Hand nghttp2's frames to the socket, as far as it takes them."""
        cdef const uint8_t *data
        cdef ssize_t n
        cdef size_t need
        cdef bint blocked
        if self.dead:
            return
        if self._write_out():
            while True:
                n = nghttp2_session_mem_send(self.session, &data)
                if n < 0:
                    log.debug("connection %d: nghttp2 send failed: %s", self.fd, nghttp2_strerror(n).decode())
                    self.dead = True
                    return
                if n == 0:
                    break
                need = self.wlen + n
                if need > self.wcap:
                    self.wcap = max(need, self.wcap * 2, 65536)
                    self.wbuf = <char *>realloc(self.wbuf, self.wcap)
                memcpy(self.wbuf + self.wlen, data, n)
                self.wlen = need
                if self.wlen >= WRITE_HIGH and not self._write_out():
                    break
            self._write_out()
        if self.dead:
            return
        blocked = self.woff < self.wlen
        if blocked != self.want_out:
            self.want_out = blocked
            self.loop.watch(self.fd, EPOLL_CTL_MOD, EPOLLIN | (EPOLLOUT if blocked else 0))
        if not blocked and not nghttp2_session_want_read(self.session) and \
                not nghttp2_session_want_write(self.session):
            self.dead = True  # both sides are done (after a GOAWAY): close

    def __dealloc__(self):
        if self.session != NULL:
            nghttp2_session_del(self.session)
        free(self.wbuf)


cdef long _ns_since(timespec *start) noexcept nogil:
    cdef timespec now
    clock_gettime(CLOCK_MONOTONIC, &now)
    return (now.tv_sec - start.tv_sec) * 1000000000 + (now.tv_nsec - start.tv_nsec)


cdef int _spin_wait(int ep, epoll_event *events, int most, long spin_ns, int timeout_ms) noexcept nogil:
    """epoll_wait that polls for ``spin_ns`` first, yielding the CPU between polls, then
    blocks. Why: on a VM a thread that blocks is woken well after its socket is
    readable (the idle vCPU must be scheduled again first); a client that sends its next
    request within that window gets its answer that much sooner. sched_yield lets any
    other runnable thread of the CPU (the switch's packet loop) go first."""
    cdef timespec start
    cdef int n
    clock_gettime(CLOCK_MONOTONIC, &start)
    while True:
        n = epoll_wait(ep, events, most, 0)
        if n != 0 or _ns_since(&start) > spin_ns:
            break
        sched_yield()
    if n == 0:
        n = epoll_wait(ep, events, most, timeout_ms)
    return n


cdef class Loop:
    """The epoll loop: listening sockets, connections, and commands from other threads.

    ``spin_us``: after a round that read a request, poll that long before blocking
    (``_spin_wait``); 0 blocks at once. The limits are ``limits.ServerLimits``'s."""

    cdef object server
    cdef readonly unsigned long ident
    cdef int ep, wake_fd
    cdef dict conns                 # fd -> Conn
    cdef set listeners              # listening fds
    cdef list dirty
    cdef object commands
    cdef public Py_ssize_t open_streams
    cdef readonly Py_ssize_t max_receive, max_header_list, max_streams, max_connections, pending_limit
    cdef readonly double stall_s
    cdef readonly Py_ssize_t refused_connections
    cdef readonly long spin_ns
    cdef list timers                # heap of (when, seq, kind, stream, arg)
    cdef long timer_seq
    cdef bint stopping, cancelling, received, accept_paused

    def __cinit__(self, server, Py_ssize_t max_receive, long spin_us=0, Py_ssize_t max_header_list=16384,
                  Py_ssize_t max_streams=100, Py_ssize_t max_connections=1000,
                  Py_ssize_t pending_limit=262144, double stall_s=30.0):
        self.server = server
        self.max_receive = max_receive
        self.max_header_list = max_header_list
        self.max_streams = max_streams
        self.max_connections = max_connections
        self.pending_limit = pending_limit
        self.stall_s = stall_s
        self.spin_ns = max(spin_us, 0) * 1000
        self.timers = []
        self.conns = {}
        self.listeners = set()
        self.dirty = []
        self.commands = collections.deque()
        self.ep = epoll_create1(EPOLL_CLOEXEC)
        self.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)
        if self.ep < 0 or self.wake_fd < 0:
            raise OSError(errno, "cannot create the loop's epoll or eventfd")
        self.watch(self.wake_fd, EPOLL_CTL_ADD, EPOLLIN)

    def __dealloc__(self):
        if self.ep >= 0:
            c_close(self.ep)
        if self.wake_fd >= 0:
            c_close(self.wake_fd)

    cdef void watch(self, int fd, int op, uint32_t events):
        cdef epoll_event ev
        ev.events = events
        ev.data.u64 = 0
        ev.data.fd = fd
        epoll_ctl(self.ep, op, fd, &ev)

    def listen(self, int fd):
        """Accept connections on this listening socket (non-blocking; the caller keeps it open
        until the loop has stopped)."""
        self.listeners.add(fd)
        self.watch(fd, EPOLL_CTL_ADD, EPOLLIN)

    cdef void mark(self, Conn conn):
        if not conn.dirty:
            conn.dirty = True
            self.dirty.append(conn)

    def post(self, command):
        """From any thread: queue a command and wake the loop."""
        cdef uint64_t one = 1
        self.commands.append(command)
        with nogil:
            c_write(self.wake_fd, &one, 8)

    def stop_listening(self):
        self.post((STOP_LISTENING, None, None))

    def cancel_all(self):
        self.post((CANCEL_ALL, None, None))

    cdef void call(self, callback):
        try:
            callback()
        except Exception:  # noqa: BLE001 - a bug above fails that call, not the loop
            log.exception("callback %r failed", callback)

    cdef void add_timer(self, double seconds, int kind, Stream st, long arg):
        """``_expire`` handles (kind, st, arg) once ``seconds`` have passed. Timers of
        streams that are over are dropped as they come due, or in bulk when they are
        most of the heap (a client's many short calls with long deadlines)."""
        cdef list live
        if len(self.timers) > 64 and len(self.timers) > 4 * self.open_streams:
            live = [t for t in self.timers if not (<Stream>t[3]).closed]
            heapq.heapify(live)
            self.timers = live
        self.timer_seq += 1
        heapq.heappush(self.timers, (time.monotonic() + seconds, self.timer_seq, kind, st, arg))

    cdef int _timeout_ms(self):
        """epoll_wait's timeout: until the first timer (-1: none), at most a minute (a
        deadline years away must not overflow a C int)."""
        cdef double left
        if not self.timers:
            return -1
        left = (<double>self.timers[0][0] - time.monotonic()) * 1000.0
        if left <= 0.0:
            return 0
        if left >= 60000.0:
            return 60000
        return <int>left + 1

    cdef void _expire(self):
        cdef Stream st
        now = time.monotonic()
        while self.timers and self.timers[0][0] <= now:
            _, _, kind, st, arg = heapq.heappop(self.timers)
            if st.closed:
                continue
            if kind == DEADLINE:
                log.debug("%s: deadline exceeded", st.method)
                if not st.responded:
                    st.rejected = True
                    st._finish(DEADLINE_EXCEEDED, b"Deadline Exceeded", None)
                else:  # answering already: end it (the client's own deadline has passed too)
                    st._reset(NGHTTP2_CANCEL)
            elif kind == STALL and st.resume is not None and st.park_seq == arg:
                log.info("%s: the client took none of its answer for %.0f s; the call is reset",
                         st.method, self.stall_s)
                st._reset(NGHTTP2_CANCEL)
            self.mark(st.conn)

    # ---- what the callbacks hand up --------------------------------------------------
    cdef void headers_in(self, Stream st):
        if self.stopping:
            st._finish(UNAVAILABLE, b"the server is shutting down", None)
            return
        st.rejected = True  # until the checks pass
        if st.header_bytes > self.max_header_list:
            st._finish(RESOURCE_EXHAUSTED, b"the request's header list is larger than max (%d vs. %d bytes)"
                       % (st.header_bytes, self.max_header_list), None)
            return
        if st.http_method != _POST:
            st.http_status = b"405"
            st._finish(UNIMPLEMENTED, b"HTTP method %s: gRPC calls are POST" % st.http_method[:32], None)
            return
        if not (st.content_type == _GRPC_TYPE or st.content_type.startswith((b"application/grpc+",
                                                                           b"application/grpc;"))):
            st._finish(UNIMPLEMENTED, b"not a gRPC request (content-type %s)" % st.content_type[:64], None)
            return
        if st.encoding not in _ENCODINGS:
            st._finish(UNIMPLEMENTED, b"grpc-encoding %s is not supported (identity, deflate, gzip are)"
                       % st.encoding[:32], None)
            return
        st.rejected = False
        if st.deadline_ns >= 0:
            self.add_timer(st.deadline_ns / 1e9, DEADLINE, st, 0)
        try:
            self.server.on_headers(st)
        except Exception:  # noqa: BLE001 - a bug above fails this call, not the loop
            log.exception("on_headers of %r failed", st.method)
            st.rejected = True
            st._finish(INTERNAL, b"the server failed to take the call", None)

    cdef void half_close(self, Stream st):
        st.half_closed = True
        if st.rejected or st.finished or st.closed:
            return
        if len(st.buf):
            st.rejected = True
            st._finish(INTERNAL, b"the request ended inside a message", None)
            return
        try:
            self.server.on_half_close(st)
        except Exception:  # noqa: BLE001
            log.exception("on_half_close of %r failed", st.method)

    cdef void data_in(self, Stream st, const uint8_t *data, size_t n):
        cdef bytearray buf = st.buf
        cdef Py_ssize_t length, have
        cdef bytes message
        if len(buf) == 0 and n >= 5:
            length = _prefix_length(data)
            if <size_t>length + 5 == n and data[0] == 0 and length <= self.max_receive:
                # the usual case: one whole, uncompressed message in one chunk
                self._message(st, (<char *>data)[5:n], 0, n)
                return
        buf.extend((<char *>data)[:n])
        while len(buf) >= 5 and not st.rejected:
            length = _prefix_length(<const uint8_t *>PyByteArray_AS_STRING(buf))
            if length > self.max_receive:
                st.rejected = True
                st._finish(RESOURCE_EXHAUSTED, b"Received message larger than max (%d vs. %d)"
                           % (length, self.max_receive), None)
                buf.clear()
                return
            if len(buf) < length + 5:
                return
            message = bytes(buf[5:length + 5])
            flag = buf[0]
            del buf[:length + 5]
            self._message(st, message, flag, length + 5)

    cdef void _message(self, Stream st, bytes message, int flag, Py_ssize_t wire):
        if flag:
            try:
                message = _inflate(st.encoding, message, self.max_receive)
            except (ValueError, zlib.error) as e:
                st.rejected = True
                st._finish(INTERNAL, f"cannot decompress the request: {e}".encode(), None)
                return
            if len(message) > self.max_receive:
                st.rejected = True
                st._finish(RESOURCE_EXHAUSTED, b"Received message larger than max (more than %d when "
                           b"decompressed)" % self.max_receive, None)
                return
        try:
            taken = self.server.on_message(st, message)
        except Exception:  # noqa: BLE001
            log.exception("on_message of %r failed", st.method)
            return
        if taken is False:  # queued for a handler's thread: its bytes stay out of the window
            if st.held is None:
                st.held = collections.deque()
            # its whole size, though its earlier chunks went back already (so the message
            # could complete): held_bytes may exceed inflight, and nothing goes back then
            # until the handler takes it. Counting only its last chunk would let a client
            # whose messages end in a 5-byte chunk queue without bound.
            st.held.append(wire)
            st.held_bytes += wire

    cdef void stream_over(self, Stream st):
        self.open_streams -= 1
        st._closed()
        try:
            self.server.on_closed(st)
        except Exception:  # noqa: BLE001
            log.exception("on_closed of %r failed", st.method)

    # ---- the loop ----------------------------------------------------------------------
    cdef void _accept(self, int lfd):
        cdef int fd, one = 1
        cdef Conn conn
        cdef nghttp2_settings_entry settings[3]
        while True:
            with nogil:
                fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)
            if fd < 0:
                if errno == EMFILE or errno == ENFILE or errno == ENOBUFS or errno == ENOMEM:
                    # the backlog stays readable: stop watching it until a connection closes
                    log.warning("cannot accept a connection (%s); accepting again when one closes",
                                os.strerror(errno))
                    for fd in self.listeners:
                        self.watch(fd, EPOLL_CTL_DEL, 0)
                    self.accept_paused = True
                return
            if len(self.conns) >= self.max_connections:
                c_close(fd)  # the client sees its connection closed (UNAVAILABLE)
                self.refused_connections += 1
                if self.refused_connections == 1 or self.refused_connections % 1000 == 0:
                    log.warning("%d connection(s) refused: %d open already (the limit)",
                                self.refused_connections, len(self.conns))
                continue
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one))
            conn = Conn.__new__(Conn)
            conn.fd = fd
            conn.loop = self
            conn.streams = {}
            nghttp2_session_server_new2(&conn.session, _the_callbacks(), <void *>conn, _the_option())
            settings[0].settings_id = NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS
            settings[0].value = self.max_streams
            settings[1].settings_id = NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE
            settings[1].value = STREAM_WINDOW
            settings[2].settings_id = NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE
            settings[2].value = self.max_header_list
            nghttp2_submit_settings(conn.session, NGHTTP2_FLAG_NONE, settings, 3)
            nghttp2_session_set_local_window_size(conn.session, NGHTTP2_FLAG_NONE, 0, CONNECTION_WINDOW)
            self.conns[fd] = conn
            self.watch(fd, EPOLL_CTL_ADD, EPOLLIN)
            self.mark(conn)

    cdef void _receive(self, Conn conn, char *buf):
        cdef ssize_t n, used
        self.mark(conn)  # flushed, or closed when dead, after this round of events
        with nogil:
            n = recv(conn.fd, buf, RECV_CHUNK, 0)
        if n < 0:
            if errno != EAGAIN and errno != EINTR:
                conn.dead = True
            return
        if n == 0:  # the client closed the connection
            conn.dead = True
            return
        self.received = True
        used = nghttp2_session_mem_recv(conn.session, <uint8_t *>buf, n)
        if used < 0:
            log.debug("connection %d: bad HTTP/2 from the client: %s", conn.fd, nghttp2_strerror(used).decode())
            nghttp2_session_terminate_session(conn.session, NGHTTP2_PROTOCOL_ERROR)

    cdef void _close(self, Conn conn):
        """The connection is gone: every stream on it is over."""
        self.watch(conn.fd, EPOLL_CTL_DEL, 0)
        c_close(conn.fd)
        del self.conns[conn.fd]
        if self.accept_paused:  # a descriptor is free again
            self.accept_paused = False
            for fd in self.listeners:
                self.watch(fd, EPOLL_CTL_ADD, EPOLLIN)
        streams = list(conn.streams.values())
        conn.streams.clear()
        for st in streams:
            self.stream_over(st)

    cdef void _commands(self):
        cdef uint64_t count
        cdef Stream st
        with nogil:
            c_read(self.wake_fd, &count, 8)
        while self.commands:
            kind, st, arg = self.commands.popleft()
            if kind == SEND:
                st._enqueue(arg)
            elif kind == FINISH:
                st._finish(arg[0], arg[1], arg[2])
                self.mark(st.conn)
            elif kind == TAKEN:
                st._taken()
            elif kind == PARK:
                st._park(arg)
            elif kind == RESET:
                st._reset(NGHTTP2_CANCEL)
            elif kind == STOP_LISTENING:
                self.stopping = True
                for fd in self.listeners:
                    self.watch(fd, EPOLL_CTL_DEL, 0)
                    shutdown(fd, SHUT_RDWR)  # new connections are refused now, not left in the backlog
                self.listeners.clear()
                for conn in self.conns.values():
                    nghttp2_submit_goaway((<Conn>conn).session, NGHTTP2_FLAG_NONE,
                                          nghttp2_session_get_last_proc_stream_id((<Conn>conn).session),
                                          NGHTTP2_NO_ERROR, NULL, 0)
                    self.mark(conn)
            elif kind == CANCEL_ALL:
                self.stopping = self.cancelling = True
                for conn in self.conns.values():
                    for sid in list((<Conn>conn).streams):
                        nghttp2_submit_rst_stream((<Conn>conn).session, NGHTTP2_FLAG_NONE, sid, NGHTTP2_CANCEL)
                    self.mark(conn)

    def run(self):
        """Serve until stopped (``stop_listening``, then no stream left or ``cancel_all``)."""
        cdef epoll_event events[64]
        cdef int n, i, fd
        cdef uint32_t flags
        cdef Conn conn
        cdef char *buf = <char *>malloc(RECV_CHUNK)
        cdef long spin_ns = 0
        cdef int timeout_ms
        self.ident = PyThread_get_thread_ident()
        try:
            while True:
                spin_ns = self.spin_ns if self.received else 0
                self.received = False
                timeout_ms = self._timeout_ms()
                with nogil:
                    if spin_ns:
                        n = _spin_wait(self.ep, events, 64, spin_ns, timeout_ms)
                    else:
                        n = epoll_wait(self.ep, events, 64, timeout_ms)
                for i in range(n):
                    fd = events[i].data.fd
                    flags = events[i].events
                    if fd == self.wake_fd:
                        self._commands()
                    elif fd in self.listeners:
                        self._accept(fd)
                    else:
                        conn = self.conns.get(fd)
                        if conn is None:
                            continue
                        if flags & (EPOLLIN | EPOLLERR | EPOLLHUP):
                            self._receive(conn, buf)
                        if flags & EPOLLOUT:
                            self.mark(conn)
                if self.timers:
                    self._expire()
                while self.dirty:
                    dirty, self.dirty = self.dirty, []
                    for conn in dirty:
                        conn.dirty = False
                        if self.conns.get(conn.fd) is not conn:
                            continue  # closed already (its fd may belong to a newer connection)
                        if not conn.dead:
                            conn.flush()
                        if conn.dead:
                            self._close(conn)
                if self.stopping and (self.cancelling or self.open_streams == 0):
                    for conn in list(self.conns.values()):
                        conn.flush()
                        self._close(conn)
                    return
        finally:
            free(buf)
            for conn in list(self.conns.values()):  # on an error too: every stream is over
                self._close(conn)
