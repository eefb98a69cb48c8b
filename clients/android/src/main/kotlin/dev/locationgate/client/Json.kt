package dev.locationgate.client

/**
 * The little JSON this library needs, with the Kotlin standard library alone: writing events
 * (`JsonObjectWriter`) and reading the server's answers (`Json.parse`).
 *
 * Reading is strict (RFC 8259: one value, nothing after it), because an answer that is not
 * exactly the server's JSON must not delete events (see `DeliveryOutcome`). Values come back as
 * `Map<String, Any?>` (objects), `List<Any?>` (arrays), `String`, `Long` (integers that fit),
 * `Double` (other numbers), `Boolean` and `null`.
 */
object Json {
    /** How deep arrays and objects may nest; the server's answers nest four levels. */
    const val MAX_DEPTH = 64

    /** `value` as a JSON string literal, quotes included. */
    @JvmStatic
    fun quote(value: String): String {
        val out = StringBuilder(value.length + 2)
        appendQuoted(out, value)
        return out.toString()
    }

    /**
     * Appends `value` as a JSON string literal: `"` and `\` escaped, control characters as
     * `\n`, `\t`... or `\u00XX`. A lone UTF-16 surrogate has no UTF-8 form and would be sent as
     * `?`, altered: it is refused with `IllegalArgumentException`.
     */
    @JvmStatic
    fun appendQuoted(out: StringBuilder, value: String) {
        out.append('"')
        var index = 0
        while (index < value.length) {
            val c = value[index]
            when {
                c == '"' -> out.append("\\\"")
                c == '\\' -> out.append("\\\\")
                c == '\n' -> out.append("\\n")
                c == '\r' -> out.append("\\r")
                c == '\t' -> out.append("\\t")
                c == '\b' -> out.append("\\b")
                c == '\u000C' -> out.append("\\f")
                c < ' ' || c == '\u007F' || c == '\u2028' || c == '\u2029' -> appendUnicodeEscape(out, c)
                Character.isHighSurrogate(c) -> {
                    require(index + 1 < value.length && Character.isLowSurrogate(value[index + 1])) {
                        "a lone UTF-16 surrogate at position $index has no UTF-8 form"
                    }
                    out.append(c).append(value[index + 1])
                    index += 1
                }
                Character.isLowSurrogate(c) -> throw IllegalArgumentException("a lone UTF-16 surrogate at position $index has no UTF-8 form")
                else -> out.append(c)
            }
            index += 1
        }
        out.append('"')
    }

    private const val HEX = "0123456789abcdef"

    private fun appendUnicodeEscape(out: StringBuilder, c: Char) {
        val code = c - '\u0000'
        out.append("\\u")
        for (shift in intArrayOf(12, 8, 4, 0)) out.append(HEX[(code shr shift) and 0xF])
    }

    /** Parses one JSON value; throws `JsonException` on anything else. */
    @JvmStatic
    fun parse(text: String): Any? = JsonReader(text).readDocument()

    /** Parses UTF-8 bytes; malformed UTF-8 is a `JsonException` too. */
    @JvmStatic
    fun parse(bytes: ByteArray): Any? {
        val decoder = Charsets.UTF_8.newDecoder()
            .onMalformedInput(java.nio.charset.CodingErrorAction.REPORT)
            .onUnmappableCharacter(java.nio.charset.CodingErrorAction.REPORT)
        val text = try {
            decoder.decode(java.nio.ByteBuffer.wrap(bytes)).toString()
        } catch (error: java.nio.charset.CharacterCodingException) {
            throw JsonException("not UTF-8")
        }
        return parse(text)
    }

    /** Parses, or null for anything that is not JSON. */
    @JvmStatic
    fun parseOrNull(bytes: ByteArray): Any? = try {
        parse(bytes)
    } catch (error: JsonException) {
        null
    }
}

/** The text is not one well-formed JSON value. */
class JsonException(message: String) : Exception(message)

/** Writes one JSON object, fields in the order written. */
class JsonObjectWriter {
    private val out = StringBuilder("{")
    private var empty = true
    private var closed = false

    private fun name(name: String): StringBuilder {
        check(!closed) { "the object is already closed" }
        if (!empty) out.append(',')
        empty = false
        Json.appendQuoted(out, name)
        return out.append(':')
    }

    fun string(name: String, value: String): JsonObjectWriter = apply { Json.appendQuoted(name(name), value) }

    fun number(name: String, value: Long): JsonObjectWriter = apply { name(name).append(value) }

    fun bool(name: String, value: Boolean): JsonObjectWriter = apply { name(name).append(if (value) "true" else "false") }

    fun strings(name: String, values: List<String>): JsonObjectWriter = apply {
        val target = name(name).append('[')
        values.forEachIndexed { position, value ->
            if (position > 0) target.append(',')
            Json.appendQuoted(target, value)
        }
        target.append(']')
    }

    /** A nested object, which must already be complete. */
    fun json(name: String, json: String): JsonObjectWriter = apply { name(name).append(json) }

    /** The object's text; the writer takes no more fields afterwards. */
    fun build(): String {
        if (!closed) {
            out.append('}')
            closed = true
        }
        return out.toString()
    }
}

/** A strict recursive-descent reader of one JSON document. */
internal class JsonReader(private val text: String) {
    private var position = 0

    fun readDocument(): Any? {
        skipWhitespace()
        val value = readValue(0)
        skipWhitespace()
        if (position != text.length) fail("unexpected text after the value")
        return value
    }

    private fun fail(message: String): Nothing = throw JsonException("$message at offset $position")

    private fun skipWhitespace() {
        while (position < text.length) {
            val c = text[position]
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r') position += 1 else return
        }
    }

    private fun readValue(depth: Int): Any? {
        if (depth > Json.MAX_DEPTH) fail("nested too deeply")
        if (position >= text.length) fail("unexpected end")
        return when (text[position]) {
            '{' -> readObject(depth)
            '[' -> readArray(depth)
            '"' -> readString()
            't' -> literal("true", true)
            'f' -> literal("false", false)
            'n' -> literal("null", null)
            else -> readNumber()
        }
    }

    private fun literal(word: String, value: Any?): Any? {
        if (!text.startsWith(word, position)) fail("unexpected character")
        position += word.length
        return value
    }

    private fun readObject(depth: Int): Map<String, Any?> {
        position += 1
        val result = LinkedHashMap<String, Any?>()
        skipWhitespace()
        if (position < text.length && text[position] == '}') {
            position += 1
            return result
        }
        while (true) {
            skipWhitespace()
            if (position >= text.length || text[position] != '"') fail("expected a member name")
            val name = readString()
            skipWhitespace()
            if (position >= text.length || text[position] != ':') fail("expected ':'")
            position += 1
            skipWhitespace()
            result[name] = readValue(depth + 1)
            skipWhitespace()
            if (position >= text.length) fail("unexpected end in an object")
            when (text[position]) {
                ',' -> position += 1
                '}' -> {
                    position += 1
                    return result
                }
                else -> fail("expected ',' or '}'")
            }
        }
    }

    private fun readArray(depth: Int): List<Any?> {
        position += 1
        val result = ArrayList<Any?>()
        skipWhitespace()
        if (position < text.length && text[position] == ']') {
            position += 1
            return result
        }
        while (true) {
            skipWhitespace()
            result.add(readValue(depth + 1))
            skipWhitespace()
            if (position >= text.length) fail("unexpected end in an array")
            when (text[position]) {
                ',' -> position += 1
                ']' -> {
                    position += 1
                    return result
                }
                else -> fail("expected ',' or ']'")
            }
        }
    }

    private fun readString(): String {
        position += 1
        val out = StringBuilder()
        while (true) {
            if (position >= text.length) fail("unterminated string")
            val c = text[position]
            when {
                c == '"' -> {
                    position += 1
                    return out.toString()
                }
                c == '\\' -> {
                    if (position + 1 >= text.length) fail("unterminated escape")
                    val escaped = text[position + 1]
                    position += 2
                    when (escaped) {
                        '"' -> out.append('"')
                        '\\' -> out.append('\\')
                        '/' -> out.append('/')
                        'b' -> out.append('\b')
                        'f' -> out.append('\u000C')
                        'n' -> out.append('\n')
                        'r' -> out.append('\r')
                        't' -> out.append('\t')
                        'u' -> out.append(readHex4())
                        else -> fail("unknown escape")
                    }
                }
                c < ' ' -> fail("control character in a string")
                else -> {
                    out.append(c)
                    position += 1
                }
            }
        }
    }

    private fun readHex4(): Char {
        if (position + 4 > text.length) fail("short \\u escape")
        var value = 0
        for (offset in 0 until 4) {
            val digit = Character.digit(text[position + offset], 16)
            if (digit < 0) fail("bad \\u escape")
            value = value * 16 + digit
        }
        position += 4
        return value.toChar()
    }

    private fun readNumber(): Any {
        val start = position
        if (position < text.length && text[position] == '-') position += 1
        if (position >= text.length) fail("unexpected end in a number")
        when {
            text[position] == '0' -> position += 1
            text[position] in '1'..'9' -> while (position < text.length && text[position] in '0'..'9') position += 1
            else -> fail("unexpected character")
        }
        var integral = true
        if (position < text.length && text[position] == '.') {
            integral = false
            position += 1
            digits()
        }
        if (position < text.length && (text[position] == 'e' || text[position] == 'E')) {
            integral = false
            position += 1
            if (position < text.length && (text[position] == '+' || text[position] == '-')) position += 1
            digits()
        }
        val literal = text.substring(start, position)
        if (integral) literal.toLongOrNull()?.let { return it }
        return literal.toDouble()
    }

    private fun digits() {
        val start = position
        while (position < text.length && text[position] in '0'..'9') position += 1
        if (position == start) fail("expected a digit")
    }
}

/** ASCII-only lower case, independent of the default locale (Turkish `I`, say). */
internal fun asciiLowercase(text: String): String {
    val out = StringBuilder(text.length)
    for (c in text) out.append(if (c in 'A'..'Z') c + ('a' - 'A') else c)
    return out.toString()
}
