//! `multipart/form-data` (RFC 7578), as mail services post a received message: SendGrid's
//! Inbound Parse with "POST the raw, full MIME message" sends the message whole in its
//! `email` field, beside `to`, `from` and `envelope`. The fields' bytes are kept as sent: a
//! message in Shift_JIS or with 8-bit parts must reach the MIME parser unchanged.

/// One field of a form: its name and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormField {
    /// The field's name (`Content-Disposition: form-data; name="…"`).
    pub name: String,
    /// Its value, as sent.
    pub value: Vec<u8>,
}

/// Why a body is not a readable form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormError {
    /// The `Content-Type` is not `multipart/form-data` with a boundary.
    #[error("not multipart/form-data with a boundary")]
    NotMultipart,
    /// The body does not hold the parts its boundary announces, or a part has no name.
    #[error("the form's parts cannot be read")]
    Malformed,
}

/// The boundary of a `multipart/form-data` content type (quoted or not).
fn boundary_of(content_type: &str) -> Option<&str> {
    let mut parameters = content_type.split(';');
    let kind = parameters.next()?.trim();
    if !kind.eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    parameters
        .filter_map(|p| p.split_once('='))
        .find(|(key, _)| key.trim().eq_ignore_ascii_case("boundary"))
        .map(|(_, value)| value.trim().trim_matches('"'))
        .filter(|b| !b.is_empty() && b.len() <= 200)
}

/// Where `needle` first occurs in `haystack` at or after `from`.
fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    haystack
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|at| at + from)
}

/// The `name` parameter of a part's `Content-Disposition` header.
fn field_name(headers: &str) -> Option<String> {
    let line = headers.lines().find(|line| {
        line.split(':')
            .next()
            .is_some_and(|h| h.trim().eq_ignore_ascii_case("content-disposition"))
    })?;
    let (_, value) = line.split_once(':')?;
    value.split(';').skip(1).find_map(|p| {
        let (key, value) = p.split_once('=')?;
        key.trim()
            .eq_ignore_ascii_case("name")
            .then(|| value.trim().trim_matches('"').to_string())
    })
}

/// The fields of a `multipart/form-data` body whose `Content-Type` header is `content_type`.
pub fn form_fields(content_type: &str, body: &[u8]) -> Result<Vec<FormField>, FormError> {
    let boundary = boundary_of(content_type).ok_or(FormError::NotMultipart)?;
    let delimiter = format!("--{boundary}").into_bytes();
    // A part's end: the line break before the next delimiter.
    let next = [b"\r\n".as_slice(), &delimiter].concat();
    let mut at = find(body, &delimiter, 0).ok_or(FormError::Malformed)? + delimiter.len();
    let mut fields = Vec::new();
    loop {
        if body.get(at..at + 2) == Some(b"--".as_slice()) {
            return Ok(fields);
        }
        // The rest of the delimiter's line, then the part's headers up to a blank line.
        let start = find(body, b"\r\n", at).ok_or(FormError::Malformed)? + 2;
        let headers_end = find(body, b"\r\n\r\n", start).ok_or(FormError::Malformed)?;
        let headers = String::from_utf8_lossy(&body[start..headers_end]);
        let content = headers_end + 4;
        let name = field_name(&headers).ok_or(FormError::Malformed)?;
        let end = find(body, &next, content).ok_or(FormError::Malformed)?;
        fields.push(FormField {
            name,
            value: body[content..end].to_vec(),
        });
        at = end + next.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TYPE: &str = "multipart/form-data; boundary=\"xYzZY\"";

    #[test]
    fn fields_are_read_with_their_bytes() {
        let body = b"--xYzZY\r\nContent-Disposition: form-data; name=\"to\"\r\n\r\n\
                     a@news.example\r\n--xYzZY\r\ncontent-disposition: form-data; name=email\r\n\
                     Content-Type: text/plain\r\n\r\nSubject: \x82\xa0\r\n\r\nbody\r\n\r\n\
                     --xYzZY--\r\n";
        let fields = form_fields(TYPE, body).unwrap();
        assert_eq!(fields.len(), 2);
        assert_eq!(fields[0].name, "to");
        assert_eq!(fields[0].value, b"a@news.example");
        assert_eq!(fields[1].name, "email");
        assert_eq!(fields[1].value, b"Subject: \x82\xa0\r\n\r\nbody\r\n");
    }

    #[test]
    fn what_is_not_a_form_is_refused() {
        assert_eq!(
            form_fields("application/json", b"{}"),
            Err(FormError::NotMultipart)
        );
        assert_eq!(
            form_fields("multipart/form-data", b""),
            Err(FormError::NotMultipart)
        );
        for body in [
            b"".as_slice(),
            b"--xYzZY\r\nContent-Disposition: form-data; name=\"to\"\r\n\r\nunended",
            b"--xYzZY\r\nContent-Type: text/plain\r\n\r\nnameless\r\n--xYzZY--",
            b"--xYzZY",
        ] {
            assert_eq!(form_fields(TYPE, body), Err(FormError::Malformed));
        }
        assert_eq!(form_fields(TYPE, b"--xYzZY--\r\n"), Ok(Vec::new()));
    }
}
