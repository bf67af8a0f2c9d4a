//! Just enough HTTP/1.1 for the agent CLIs' model clients: requests with a
//! `Content-Length` or chunked body on a keep-alive connection, and
//! responses that are either a whole body or a chunked event stream.
//!
//! Blocking std I/O over any `Read + Write` (a TCP stream or a rustls
//! stream), one thread per connection: the clients under test make a
//! handful of requests per test, and a runtime would add nothing.

use std::io::{self, BufRead, BufReader, Read, Write};

/// Largest request head or body accepted: the CLIs send their whole
/// conversation each turn, which stays far below this in tests.
const MAX_BODY: usize = 64 * 1024 * 1024;
const MAX_HEAD_LINE: usize = 64 * 1024;

/// One request as received.
#[derive(Debug)]
pub struct Request {
    pub method: String,
    /// The request target as sent (path and query).
    pub target: String,
    /// Header names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The credential the request was sent with, as the APIs take it:
    /// Anthropic's `x-api-key`, OpenAI's `Authorization: Bearer`, Gemini's
    /// `x-goog-api-key`.
    pub fn credential(&self) -> Option<&str> {
        self.header("x-api-key")
            .or_else(|| {
                self.header("authorization")
                    .and_then(|v| v.strip_prefix("Bearer "))
            })
            .or_else(|| self.header("x-goog-api-key"))
    }

    /// The path without its query string.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// Whether the client asked to close the connection after this request.
    pub fn wants_close(&self) -> bool {
        self.header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"))
    }
}

/// A connection: buffered reading, direct writing.
pub struct Conn<S: Read + Write> {
    reader: BufReader<S>,
}

impl<S: Read + Write> Conn<S> {
    pub fn new(stream: S) -> Conn<S> {
        Conn {
            reader: BufReader::new(stream),
        }
    }

    fn line(&mut self) -> io::Result<Option<String>> {
        let mut buf = Vec::new();
        let n = (&mut self.reader)
            .take(MAX_HEAD_LINE as u64)
            .read_until(b'\n', &mut buf)?;
        if n == 0 {
            return Ok(None);
        }
        if !buf.ends_with(b"\n") {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request line too long",
            ));
        }
        let text = String::from_utf8_lossy(&buf);
        Ok(Some(text.trim_end_matches(['\r', '\n']).to_owned()))
    }

    /// The next request, or `None` when the client closed the connection.
    pub fn read_request(&mut self) -> io::Result<Option<Request>> {
        let start = loop {
            match self.line()? {
                None => return Ok(None),
                // Tolerate stray blank lines between keep-alive requests.
                Some(l) if l.is_empty() => continue,
                Some(l) => break l,
            }
        };
        let mut parts = start.split_whitespace();
        let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("bad request line {start:?}"),
            ));
        };
        let (method, target) = (method.to_owned(), target.to_owned());
        let mut headers = Vec::new();
        loop {
            let Some(line) = self.line()? else {
                return Err(io::ErrorKind::UnexpectedEof.into());
            };
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
            }
        }
        let mut req = Request {
            method,
            target,
            headers,
            body: Vec::new(),
        };
        if req.header("expect").is_some_and(|v| v.starts_with("100")) {
            self.write_raw(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        }
        let chunked = req
            .header("transfer-encoding")
            .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
        if chunked {
            req.body = self.read_chunked()?;
        } else if let Some(len) = req.header("content-length") {
            let len: usize = len
                .parse()
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad content-length"))?;
            if len > MAX_BODY {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "body too large"));
            }
            let mut body = vec![0; len];
            self.reader.read_exact(&mut body)?;
            req.body = body;
        }
        Ok(Some(req))
    }

    fn read_chunked(&mut self) -> io::Result<Vec<u8>> {
        let mut body = Vec::new();
        loop {
            let Some(size_line) = self.line()? else {
                return Err(io::ErrorKind::UnexpectedEof.into());
            };
            let size_hex = size_line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_hex, 16)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad chunk size"))?;
            if size == 0 {
                // Trailers, then the blank line.
                while let Some(l) = self.line()? {
                    if l.is_empty() {
                        break;
                    }
                }
                return Ok(body);
            }
            if body.len() + size > MAX_BODY {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "body too large"));
            }
            let at = body.len();
            body.resize(at + size, 0);
            self.reader.read_exact(&mut body[at..])?;
            let mut crlf = [0u8; 2];
            self.reader.read_exact(&mut crlf)?;
        }
    }

    fn write_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        let out = self.reader.get_mut();
        out.write_all(bytes)?;
        out.flush()
    }

    /// A complete response with a body of known length.
    pub fn respond(
        &mut self,
        status: u16,
        content_type: &str,
        extra_headers: &[(&str, String)],
        body: &[u8],
    ) -> io::Result<()> {
        let mut head = format!(
            "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n",
            reason(status),
            body.len()
        );
        for (k, v) in extra_headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let out = self.reader.get_mut();
        out.write_all(head.as_bytes())?;
        out.write_all(body)?;
        out.flush()
    }

    /// Starts a chunked `text/event-stream` response.
    pub fn start_stream(&mut self, extra_headers: &[(&str, String)]) -> io::Result<()> {
        let mut head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n".to_owned();
        for (k, v) in extra_headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        self.write_raw(head.as_bytes())
    }

    /// One chunk of a streamed response (flushed at once, so the client
    /// sees each event as it is sent).
    pub fn chunk(&mut self, data: &[u8]) -> io::Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let mut frame = format!("{:x}\r\n", data.len()).into_bytes();
        frame.extend_from_slice(data);
        frame.extend_from_slice(b"\r\n");
        self.write_raw(&frame)
    }

    pub fn end_stream(&mut self) -> io::Result<()> {
        self.write_raw(b"0\r\n\r\n")
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// A byte pipe: reads from `input`, collects writes in `output`.
    struct Pipe {
        input: Cursor<Vec<u8>>,
        output: Vec<u8>,
    }
    impl Read for Pipe {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.input.read(buf)
        }
    }
    impl Write for Pipe {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.output.write(buf)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn reads_keep_alive_requests_with_length_and_chunked_bodies() {
        let wire = b"POST /v1/messages?beta=true HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhelloPOST /v1/responses HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\nHEAD / HTTP/1.1\r\nConnection: close\r\n\r\n";
        let mut conn = Conn::new(Pipe {
            input: Cursor::new(wire.to_vec()),
            output: Vec::new(),
        });
        let a = conn.read_request().unwrap().unwrap();
        assert_eq!(
            (a.method.as_str(), a.path(), a.body.as_slice()),
            ("POST", "/v1/messages", &b"hello"[..])
        );
        let b = conn.read_request().unwrap().unwrap();
        assert_eq!(b.body, b"abcde");
        let c = conn.read_request().unwrap().unwrap();
        assert_eq!(c.method, "HEAD");
        assert!(c.wants_close());
        assert!(conn.read_request().unwrap().is_none());
    }

    #[test]
    fn a_stream_is_sent_as_chunks_ending_with_an_empty_one() {
        let mut conn = Conn::new(Pipe {
            input: Cursor::new(Vec::new()),
            output: Vec::new(),
        });
        conn.start_stream(&[]).unwrap();
        conn.chunk(b"data: 1\n\n").unwrap();
        conn.end_stream().unwrap();
        let out = String::from_utf8(conn.reader.into_inner().output).unwrap();
        assert!(out.starts_with("HTTP/1.1 200 OK\r\n"));
        // "data: 1\n\n" is 9 bytes: its chunk size line is "9".
        assert!(out.ends_with("\r\n\r\n9\r\ndata: 1\n\n\r\n0\r\n\r\n"));
    }
}
