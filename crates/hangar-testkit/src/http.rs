//! One HTTP/1.1 request read off a connection, for the small stand-in APIs
//! tests serve themselves (a request line, header lines up to an empty
//! line, then `Content-Length` bytes of body: RFC 9112 sections 3, 5 and
//! 6.3, without chunked request bodies, which no agent CLI sends).

use std::io::{self, BufRead};

/// A request as the server read it.
#[derive(Clone, Debug, Default)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// Lowercase header names with their trimmed values, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Reads one request; `Ok(None)` when the peer closed before a request
/// line.
pub fn read_request(r: &mut impl BufRead) -> io::Result<Option<Request>> {
    let mut request_line = String::new();
    if r.read_line(&mut request_line)? == 0 {
        return Ok(None);
    }
    let mut words = request_line.split_whitespace();
    let method = words.next().unwrap_or("").to_owned();
    let path = words.next().unwrap_or("").to_owned();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            break;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let mut request = Request {
        method,
        path,
        headers,
        body: Vec::new(),
    };
    let len: usize = request
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    request.body = vec![0; len];
    r.read_exact(&mut request.body)?;
    Ok(Some(request))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_read_with_its_headers_and_exactly_its_body() {
        let raw = b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nX-Api-Key: k\r\n\r\nbodyNEXT";
        let mut r = &raw[..];
        let req = read_request(&mut r).unwrap().unwrap();
        assert_eq!(req.method, "POST");
        assert_eq!(req.path, "/v1/messages");
        assert_eq!(req.header("x-api-key"), Some("k"));
        assert_eq!(req.header("HOST"), Some("x"));
        assert_eq!(req.body_text(), "body");
        assert_eq!(r, b"NEXT");
        assert!(read_request(&mut &b""[..]).unwrap().is_none());
    }
}
