# cython: language_level=3
"""The C declarations h2_loop.pyx uses: the POSIX calls of its loop and nghttp2's API
(only what it calls; Debian's libnghttp2-dev has the whole header)."""

from libc.stdint cimport int32_t, uint8_t, uint32_t, uint64_t

cdef extern from "<sys/types.h>":
    ctypedef long ssize_t

cdef extern from "<unistd.h>" nogil:
    ssize_t c_read "read"(int fd, void *buf, size_t n)
    ssize_t c_write "write"(int fd, const void *buf, size_t n)
    int c_close "close"(int fd)

cdef extern from "<sys/socket.h>" nogil:
    int accept4(int fd, void *addr, void *addrlen, int flags)
    ssize_t recv(int fd, void *buf, size_t n, int flags)
    ssize_t send(int fd, const void *buf, size_t n, int flags)
    int setsockopt(int fd, int level, int name, const void *value, unsigned int size)
    int shutdown(int fd, int how)
    int SOCK_NONBLOCK, SOCK_CLOEXEC, MSG_NOSIGNAL, SHUT_RDWR

cdef extern from "<netinet/in.h>" nogil:
    int IPPROTO_TCP

cdef extern from "<netinet/tcp.h>" nogil:
    int TCP_NODELAY

cdef extern from "<sched.h>" nogil:
    int sched_yield()

cdef extern from "<time.h>" nogil:
    ctypedef long time_t
    struct timespec:
        time_t tv_sec
        long tv_nsec
    int clock_gettime(int clock, timespec *ts)
    int CLOCK_MONOTONIC

cdef extern from "<sys/eventfd.h>" nogil:
    int eventfd(unsigned int initval, int flags)
    int EFD_NONBLOCK, EFD_CLOEXEC

cdef extern from "<sys/epoll.h>" nogil:
    ctypedef union epoll_data_t:
        int fd
        uint64_t u64
    struct epoll_event:
        uint32_t events
        epoll_data_t data
    int epoll_create1(int flags)
    int epoll_ctl(int epfd, int op, int fd, epoll_event *event)
    int epoll_wait(int epfd, epoll_event *events, int maxevents, int timeout)
    int EPOLL_CLOEXEC, EPOLL_CTL_ADD, EPOLL_CTL_MOD, EPOLL_CTL_DEL
    uint32_t EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP

cdef extern from "<nghttp2/nghttp2.h>":
    ctypedef struct nghttp2_session:
        pass
    ctypedef struct nghttp2_session_callbacks:
        pass
    ctypedef struct nghttp2_option:
        pass
    ctypedef struct nghttp2_frame_hd:
        size_t length
        int32_t stream_id
        uint8_t type
        uint8_t flags
    ctypedef struct nghttp2_headers:
        nghttp2_frame_hd hd
        int cat
    ctypedef union nghttp2_frame:
        nghttp2_frame_hd hd
        nghttp2_headers headers
    ctypedef struct nghttp2_nv:
        uint8_t *name
        uint8_t *value
        size_t namelen
        size_t valuelen
        uint8_t flags
    ctypedef union nghttp2_data_source:
        int fd
        void *ptr
    ctypedef ssize_t (*nghttp2_data_source_read_callback)(
        nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length, uint32_t *data_flags,
        nghttp2_data_source *source, void *user_data)
    ctypedef struct nghttp2_data_provider:
        nghttp2_data_source source
        nghttp2_data_source_read_callback read_callback
    ctypedef struct nghttp2_settings_entry:
        int32_t settings_id
        uint32_t value

    ctypedef int (*nghttp2_on_frame_recv_callback)(nghttp2_session *, const nghttp2_frame *, void *)
    ctypedef int (*nghttp2_on_frame_send_callback)(nghttp2_session *, const nghttp2_frame *, void *)
    ctypedef int (*nghttp2_on_begin_headers_callback)(nghttp2_session *, const nghttp2_frame *, void *)
    ctypedef int (*nghttp2_on_header_callback)(nghttp2_session *, const nghttp2_frame *, const uint8_t *, size_t,
                                               const uint8_t *, size_t, uint8_t, void *)
    ctypedef int (*nghttp2_on_data_chunk_recv_callback)(nghttp2_session *, uint8_t, int32_t, const uint8_t *,
                                                        size_t, void *)
    ctypedef int (*nghttp2_on_stream_close_callback)(nghttp2_session *, int32_t, uint32_t, void *)

    int nghttp2_session_callbacks_new(nghttp2_session_callbacks **callbacks)
    void nghttp2_session_callbacks_set_on_frame_recv_callback(nghttp2_session_callbacks *, nghttp2_on_frame_recv_callback)
    void nghttp2_session_callbacks_set_on_frame_send_callback(nghttp2_session_callbacks *, nghttp2_on_frame_send_callback)
    void nghttp2_session_callbacks_set_on_begin_headers_callback(nghttp2_session_callbacks *,
                                                                 nghttp2_on_begin_headers_callback)
    void nghttp2_session_callbacks_set_on_header_callback(nghttp2_session_callbacks *, nghttp2_on_header_callback)
    void nghttp2_session_callbacks_set_on_data_chunk_recv_callback(nghttp2_session_callbacks *,
                                                                   nghttp2_on_data_chunk_recv_callback)
    void nghttp2_session_callbacks_set_on_stream_close_callback(nghttp2_session_callbacks *,
                                                                nghttp2_on_stream_close_callback)
    int nghttp2_option_new(nghttp2_option **option)
    void nghttp2_option_set_no_auto_window_update(nghttp2_option *option, int val)
    int nghttp2_session_server_new2(nghttp2_session **session, const nghttp2_session_callbacks *callbacks,
                                    void *user_data, const nghttp2_option *option)
    int nghttp2_session_consume_connection(nghttp2_session *session, size_t size)
    int nghttp2_session_consume_stream(nghttp2_session *session, int32_t stream_id, size_t size)
    void nghttp2_session_del(nghttp2_session *session)
    ssize_t nghttp2_session_mem_recv(nghttp2_session *session, const uint8_t *data, size_t n)
    ssize_t nghttp2_session_mem_send(nghttp2_session *session, const uint8_t **data)
    int nghttp2_session_want_read(nghttp2_session *session)
    int nghttp2_session_want_write(nghttp2_session *session)
    int nghttp2_session_resume_data(nghttp2_session *session, int32_t stream_id)
    int nghttp2_session_set_local_window_size(nghttp2_session *session, uint8_t flags, int32_t stream_id,
                                              int32_t window_size)
    int32_t nghttp2_session_get_last_proc_stream_id(nghttp2_session *session)
    int nghttp2_session_terminate_session(nghttp2_session *session, uint32_t error_code)
    int nghttp2_submit_settings(nghttp2_session *session, uint8_t flags, const nghttp2_settings_entry *iv,
                                size_t niv)
    int nghttp2_submit_response(nghttp2_session *session, int32_t stream_id, const nghttp2_nv *nva, size_t nvlen,
                                const nghttp2_data_provider *data_prd)
    int nghttp2_submit_trailer(nghttp2_session *session, int32_t stream_id, const nghttp2_nv *nva, size_t nvlen)
    int nghttp2_submit_rst_stream(nghttp2_session *session, uint8_t flags, int32_t stream_id, uint32_t error_code)
    int nghttp2_submit_goaway(nghttp2_session *session, uint8_t flags, int32_t last_stream_id, uint32_t error_code,
                              const uint8_t *opaque_data, size_t opaque_data_len)
    const char *nghttp2_strerror(int lib_error_code)

    int NGHTTP2_DATA, NGHTTP2_HEADERS, NGHTTP2_HCAT_REQUEST, NGHTTP2_HCAT_HEADERS
    int NGHTTP2_FLAG_NONE, NGHTTP2_FLAG_END_STREAM
    int NGHTTP2_DATA_FLAG_EOF, NGHTTP2_DATA_FLAG_NO_END_STREAM
    int NGHTTP2_ERR_DEFERRED
    int NGHTTP2_NV_FLAG_NONE
    int NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE
    int NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE
    int NGHTTP2_NO_ERROR, NGHTTP2_PROTOCOL_ERROR, NGHTTP2_INTERNAL_ERROR, NGHTTP2_REFUSED_STREAM, NGHTTP2_CANCEL
