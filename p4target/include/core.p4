/* core.p4 for the embedded P4 target: the P4_16 core library declarations
 * (packet_in, packet_out, NoAction, the standard errors and match kinds), written
 * from the definitions in the P4_16 language specification. */
#ifndef _CORE_P4_
#define _CORE_P4_

/* Errors the parser runtime may signal. */
error {
    NoError,
    PacketTooShort,
    NoMatch,
    StackOutOfBounds,
    HeaderTooShort,
    ParserTimeout,
    ParserInvalidArgument
}

extern packet_in {
    /* Read a fixed-size header (or a header with a varbit field) from the packet. */
    void extract<T>(out T hdr);
    void extract<T>(out T variableSizeHeader, in bit<32> variableFieldSizeInBits);
    /* Peek at bits without consuming them. */
    T lookahead<T>();
    /* Skip bits. */
    void advance(in bit<32> sizeInBits);
    /* Length of the packet in bytes. */
    bit<32> length();
}

extern packet_out {
    /* Append a valid header (or every valid header of a stack/struct). */
    void emit<T>(in T hdr);
}

/* Stop the parser with an error when the condition is false. */
extern void verify(in bool check, in error toSignal);

/* The action that does nothing. */
@noWarn("unused")
action NoAction() {}

/* Match kinds every architecture supports. */
match_kind {
    exact,
    ternary,
    lpm
}

/* A compile-time check: the program is refused when ``check`` is false. */
extern bool static_assert(bool check, string message);
extern bool static_assert(bool check);

#endif
