//! WebAuthn (Level 2) relying-party checks for passkeys: the options a browser needs for
//! `navigator.credentials.create()` / `.get()`, and the verification of what it answers.
//!
//! The checks are the ones the specification lists for a relying party that asks for no
//! attestation (`attestation: "none"`): the client data's type, challenge and origin; the
//! authenticator data's RP ID hash and user-presence / user-verification flags; the credential's
//! COSE public key (ES256, EdDSA or RS256) and, when signing in, the signature over
//! `authenticatorData ‖ SHA-256(clientDataJSON)` and the signature counter. Signatures are
//! verified with `ring` and CBOR is read with `ciborium` (both already in the tree), rather than
//! with webauthn-rs, which links OpenSSL (a C library and a build dependency this project has
//! avoided so far) and brings dozens of crates for attestation formats tidings does not check.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ciborium::Value;
use ring::signature;
use serde::Deserialize;
use sha2::{Digest, Sha256};

/// COSE algorithm ES256 (ECDSA P-256 with SHA-256).
pub const ES256: i64 = -7;
/// COSE algorithm EdDSA (Ed25519).
pub const EDDSA: i64 = -8;
/// COSE algorithm RS256 (RSASSA-PKCS1-v1_5 with SHA-256).
pub const RS256: i64 = -257;

/// Authenticator data flag: the user was present (touched the key, unlocked the phone).
const FLAG_USER_PRESENT: u8 = 0x01;
/// Authenticator data flag: the user was verified (PIN, fingerprint, face).
const FLAG_USER_VERIFIED: u8 = 0x04;
/// Authenticator data flag: attested credential data follows.
const FLAG_ATTESTED_DATA: u8 = 0x40;

/// Why a browser's answer was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebauthnError {
    /// The answer is not what a browser sends (bad base64, JSON or CBOR, short data).
    #[error("the passkey answer is malformed: {0}")]
    Malformed(String),
    /// The answer was made for another ceremony, challenge, site or origin.
    #[error("the passkey answer does not match: {0}")]
    Mismatch(String),
    /// The authenticator did not see the user, or did not verify them when that was required.
    #[error("the passkey did not {0}")]
    NotVerified(&'static str),
    /// The key type is not one of ES256, EdDSA or RS256.
    #[error("the passkey uses a key type tidings does not support ({0})")]
    UnsupportedKey(String),
    /// The signature does not verify with the registered key.
    #[error("the passkey's signature is wrong")]
    BadSignature,
}

/// Who the relying party is: its RP ID (a domain) and the origin pages come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelyingParty {
    /// The RP ID: the host of `TIDINGS_BASE_URL`.
    pub id: String,
    /// The only origin accepted: the origin of `TIDINGS_BASE_URL`.
    pub origin: String,
}

impl RelyingParty {
    /// The relying party of a server reached at `base_url`.
    pub fn for_base_url(base_url: &url::Url) -> RelyingParty {
        RelyingParty {
            id: base_url.host_str().unwrap_or("localhost").to_string(),
            origin: base_url.origin().ascii_serialization(),
        }
    }
}

/// Base64url without padding, as WebAuthn's JSON forms use it.
pub fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Decodes base64url with or without padding.
pub fn unb64(text: &str) -> Result<Vec<u8>, WebauthnError> {
    URL_SAFE_NO_PAD
        .decode(text.trim_end_matches('='))
        .map_err(|_| WebauthnError::Malformed("a field is not base64url".into()))
}

/// The user handle of a tidings user: the id's 8 bytes, big-endian (no personal data).
pub fn user_handle(user_id: i64) -> Vec<u8> {
    user_id.to_be_bytes().to_vec()
}

/// The user id in a user handle made by [`user_handle`].
pub fn user_from_handle(handle: &[u8]) -> Option<i64> {
    <[u8; 8]>::try_from(handle).ok().map(i64::from_be_bytes)
}

/// A new random challenge (32 bytes), base64url.
pub fn new_challenge() -> String {
    b64(&rand::random::<[u8; 32]>())
}

/// The JSON form of a `PublicKeyCredential` from `navigator.credentials.create()`, with
/// every binary field as base64url (the UI encodes them).
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
pub struct RegistrationCredential {
    /// The credential id (base64url).
    pub id: String,
    /// The authenticator's answer.
    pub response: RegistrationResponse,
}

/// `AuthenticatorAttestationResponse`, base64url.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationResponse {
    /// The client data the browser made (JSON), base64url.
    #[serde(rename = "clientDataJSON")]
    pub client_data_json: String,
    /// The attestation object (CBOR), base64url.
    pub attestation_object: String,
}

/// The JSON form of a `PublicKeyCredential` from `navigator.credentials.get()`.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
pub struct AssertionCredential {
    /// The credential id (base64url).
    pub id: String,
    /// The authenticator's answer.
    pub response: AssertionResponse,
}

/// `AuthenticatorAssertionResponse`, base64url.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AssertionResponse {
    /// The client data (JSON), base64url.
    #[serde(rename = "clientDataJSON")]
    pub client_data_json: String,
    /// The authenticator data, base64url.
    pub authenticator_data: String,
    /// The signature, base64url.
    pub signature: String,
    /// The user handle stored with a discoverable credential, base64url.
    #[serde(default)]
    pub user_handle: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ClientData {
    #[serde(rename = "type")]
    kind: String,
    challenge: String,
    origin: String,
    #[serde(default, rename = "crossOrigin")]
    cross_origin: bool,
}

/// The challenge a client data JSON (base64url) answers, so the caller can find the stored
/// challenge before verifying against it.
pub fn challenge_of(client_data_json_b64: &str) -> Result<String, WebauthnError> {
    Ok(client_data(client_data_json_b64)?.1.challenge)
}

fn client_data(encoded: &str) -> Result<(Vec<u8>, ClientData), WebauthnError> {
    let raw = unb64(encoded)?;
    let parsed: ClientData = serde_json::from_slice(&raw)
        .map_err(|e| WebauthnError::Malformed(format!("client data: {e}")))?;
    Ok((raw, parsed))
}

fn check_client_data(
    data: &ClientData,
    kind: &str,
    challenge: &str,
    rp: &RelyingParty,
) -> Result<(), WebauthnError> {
    if data.kind != kind {
        return Err(WebauthnError::Mismatch(format!(
            "it is a {} answer, not {kind}",
            data.kind
        )));
    }
    // Both are base64url of the same bytes; compared as bytes in case of padding.
    if unb64(&data.challenge)? != unb64(challenge)? {
        return Err(WebauthnError::Mismatch("another challenge".into()));
    }
    if data.origin != rp.origin {
        return Err(WebauthnError::Mismatch(format!(
            "the page's origin is {}, but this server is {} (set TIDINGS_BASE_URL to the \
             address people use)",
            data.origin, rp.origin
        )));
    }
    if data.cross_origin {
        return Err(WebauthnError::Mismatch(
            "it came from a frame of another site".into(),
        ));
    }
    Ok(())
}

/// The parts of authenticator data tidings uses.
struct AuthenticatorData<'a> {
    flags: u8,
    sign_count: u32,
    /// What follows the fixed 37 bytes (attested credential data, extensions).
    rest: &'a [u8],
}

fn authenticator_data<'a>(
    data: &'a [u8],
    rp: &RelyingParty,
    user_verification: bool,
) -> Result<AuthenticatorData<'a>, WebauthnError> {
    if data.len() < 37 {
        return Err(WebauthnError::Malformed(
            "authenticator data is short".into(),
        ));
    }
    if data[..32] != Sha256::digest(rp.id.as_bytes())[..] {
        return Err(WebauthnError::Mismatch(format!(
            "the passkey is for another site than {}",
            rp.id
        )));
    }
    let flags = data[32];
    if flags & FLAG_USER_PRESENT == 0 {
        return Err(WebauthnError::NotVerified("see the user present"));
    }
    if user_verification && flags & FLAG_USER_VERIFIED == 0 {
        return Err(WebauthnError::NotVerified(
            "verify the user (PIN or biometrics)",
        ));
    }
    Ok(AuthenticatorData {
        flags,
        sign_count: u32::from_be_bytes([data[33], data[34], data[35], data[36]]),
        rest: &data[37..],
    })
}

/// A passkey that passed registration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPasskey {
    /// The credential id, base64url.
    pub credential_id: String,
    /// The COSE_Key bytes, as the authenticator sent them.
    pub public_key: Vec<u8>,
    /// The authenticator's counter.
    pub sign_count: u32,
}

/// Verifies a registration answer against the stored `challenge`.
pub fn verify_registration(
    rp: &RelyingParty,
    challenge: &str,
    credential: &RegistrationCredential,
) -> Result<NewPasskey, WebauthnError> {
    let (_, data) = client_data(&credential.response.client_data_json)?;
    check_client_data(&data, "webauthn.create", challenge, rp)?;
    let attestation = unb64(&credential.response.attestation_object)?;
    let object: Value = ciborium::from_reader(attestation.as_slice())
        .map_err(|e| WebauthnError::Malformed(format!("attestation object: {e}")))?;
    let auth_data = map_get(&object, &Value::Text("authData".into()))
        .and_then(|v| v.as_bytes())
        .ok_or_else(|| WebauthnError::Malformed("no authData in the attestation".into()))?;
    let parsed = authenticator_data(auth_data, rp, true)?;
    if parsed.flags & FLAG_ATTESTED_DATA == 0 {
        return Err(WebauthnError::Malformed(
            "no credential in the answer".into(),
        ));
    }
    // aaguid (16) ‖ credential id length (2) ‖ credential id ‖ COSE_Key ‖ extensions.
    let rest = parsed.rest;
    if rest.len() < 18 {
        return Err(WebauthnError::Malformed(
            "attested credential data is short".into(),
        ));
    }
    let id_len = usize::from(u16::from_be_bytes([rest[16], rest[17]]));
    let after_id = 18 + id_len;
    if rest.len() < after_id {
        return Err(WebauthnError::Malformed(
            "the credential id is cut short".into(),
        ));
    }
    let credential_id = b64(&rest[18..after_id]);
    if unb64(&credential.id)? != rest[18..after_id] {
        return Err(WebauthnError::Mismatch(
            "the credential id differs from the answer's".into(),
        ));
    }
    // The COSE key is one CBOR item; extensions may follow it, so its length is where the
    // reader stopped.
    let mut reader = std::io::Cursor::new(&rest[after_id..]);
    let key: Value = ciborium::from_reader(&mut reader)
        .map_err(|e| WebauthnError::Malformed(format!("public key: {e}")))?;
    let key_len = reader.position() as usize;
    // Refuse a key tidings could not verify with later.
    PublicKey::from_cose(&key)?;
    Ok(NewPasskey {
        credential_id,
        public_key: rest[after_id..after_id + key_len].to_vec(),
        sign_count: parsed.sign_count,
    })
}

/// A passkey that passed sign-in: its new counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Assertion {
    /// The authenticator's counter now (0 when it keeps none).
    pub sign_count: u32,
    /// Whether the user was verified (PIN, biometrics).
    pub user_verified: bool,
}

/// Verifies a sign-in answer against the stored `challenge` and the passkey's COSE key.
pub fn verify_assertion(
    rp: &RelyingParty,
    challenge: &str,
    credential: &AssertionCredential,
    cose_key: &[u8],
    user_verification: bool,
) -> Result<Assertion, WebauthnError> {
    let (raw_client_data, data) = client_data(&credential.response.client_data_json)?;
    check_client_data(&data, "webauthn.get", challenge, rp)?;
    let auth_data = unb64(&credential.response.authenticator_data)?;
    let parsed = authenticator_data(&auth_data, rp, user_verification)?;
    let signature = unb64(&credential.response.signature)?;
    let key: Value = ciborium::from_reader(cose_key)
        .map_err(|e| WebauthnError::Malformed(format!("stored key: {e}")))?;
    let mut signed = auth_data.clone();
    signed.extend_from_slice(&Sha256::digest(&raw_client_data));
    PublicKey::from_cose(&key)?.verify(&signed, &signature)?;
    Ok(Assertion {
        sign_count: parsed.sign_count,
        user_verified: parsed.flags & FLAG_USER_VERIFIED != 0,
    })
}

fn map_get<'a>(map: &'a Value, key: &Value) -> Option<&'a Value> {
    map.as_map()?.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

fn cose_int(map: &Value, key: i64) -> Option<&Value> {
    map_get(map, &Value::Integer(key.into()))
}

fn cose_bytes(map: &Value, key: i64) -> Result<&[u8], WebauthnError> {
    cose_int(map, key)
        .and_then(|v| v.as_bytes())
        .map(Vec::as_slice)
        .ok_or_else(|| WebauthnError::Malformed(format!("COSE key parameter {key} is missing")))
}

/// A public key read from a COSE_Key.
enum PublicKey {
    /// P-256, as an uncompressed point.
    Es256(Vec<u8>),
    /// Ed25519.
    EdDsa(Vec<u8>),
    /// RSA modulus and exponent.
    Rs256 { n: Vec<u8>, e: Vec<u8> },
}

impl PublicKey {
    fn from_cose(key: &Value) -> Result<PublicKey, WebauthnError> {
        let int = |label: i64| -> Option<i128> {
            cose_int(key, label)
                .and_then(|v| v.as_integer())
                .map(i128::from)
        };
        let (kty, alg) = (int(1), int(3));
        match (kty, alg) {
            // kty EC2, crv P-256.
            (Some(2), Some(a)) if a == i128::from(ES256) => {
                if int(-1) != Some(1) {
                    return Err(WebauthnError::UnsupportedKey(
                        "an EC2 curve other than P-256".into(),
                    ));
                }
                let (x, y) = (cose_bytes(key, -2)?, cose_bytes(key, -3)?);
                if x.len() != 32 || y.len() != 32 {
                    return Err(WebauthnError::Malformed(
                        "a P-256 coordinate is not 32 bytes".into(),
                    ));
                }
                let mut point = vec![0x04];
                point.extend_from_slice(x);
                point.extend_from_slice(y);
                Ok(PublicKey::Es256(point))
            }
            // kty OKP, crv Ed25519.
            (Some(1), Some(a)) if a == i128::from(EDDSA) => {
                if int(-1) != Some(6) {
                    return Err(WebauthnError::UnsupportedKey(
                        "an OKP curve other than Ed25519".into(),
                    ));
                }
                Ok(PublicKey::EdDsa(cose_bytes(key, -2)?.to_vec()))
            }
            // kty RSA.
            (Some(3), Some(a)) if a == i128::from(RS256) => Ok(PublicKey::Rs256 {
                n: cose_bytes(key, -1)?.to_vec(),
                e: cose_bytes(key, -2)?.to_vec(),
            }),
            _ => Err(WebauthnError::UnsupportedKey(format!(
                "kty {kty:?}, alg {alg:?}"
            ))),
        }
    }

    fn verify(&self, message: &[u8], signature: &[u8]) -> Result<(), WebauthnError> {
        let verified = match self {
            PublicKey::Es256(point) => {
                signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_ASN1, point)
                    .verify(message, signature)
            }
            PublicKey::EdDsa(key) => signature::UnparsedPublicKey::new(&signature::ED25519, key)
                .verify(message, signature),
            PublicKey::Rs256 { n, e } => signature::RsaPublicKeyComponents { n, e }.verify(
                &signature::RSA_PKCS1_2048_8192_SHA256,
                message,
                signature,
            ),
        };
        verified.map_err(|_| WebauthnError::BadSignature)
    }
}

#[cfg(test)]
mod tests {
    //! A software authenticator (P-256 and Ed25519 keys from `ring`) makes the answers a
    //! browser would send; every check is shown to refuse what it guards against.

    use super::*;
    use ring::rand::SystemRandom;
    use ring::signature::{EcdsaKeyPair, Ed25519KeyPair, KeyPair};

    fn rp() -> RelyingParty {
        RelyingParty::for_base_url(&"https://reader.example.org/".parse().unwrap())
    }

    fn cbor(value: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        ciborium::into_writer(value, &mut out).unwrap();
        out
    }

    fn int(i: i64) -> Value {
        Value::Integer(i.into())
    }

    enum Key {
        P256(EcdsaKeyPair),
        Ed(Ed25519KeyPair),
    }

    impl Key {
        fn p256() -> Key {
            let rng = SystemRandom::new();
            let doc =
                EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_ASN1_SIGNING, &rng)
                    .unwrap();
            Key::P256(
                EcdsaKeyPair::from_pkcs8(
                    &signature::ECDSA_P256_SHA256_ASN1_SIGNING,
                    doc.as_ref(),
                    &rng,
                )
                .unwrap(),
            )
        }

        fn ed25519() -> Key {
            let doc = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
            Key::Ed(Ed25519KeyPair::from_pkcs8(doc.as_ref()).unwrap())
        }

        fn cose(&self) -> Value {
            match self {
                Key::P256(pair) => {
                    let point = pair.public_key().as_ref();
                    Value::Map(vec![
                        (int(1), int(2)),
                        (int(3), int(ES256)),
                        (int(-1), int(1)),
                        (int(-2), Value::Bytes(point[1..33].to_vec())),
                        (int(-3), Value::Bytes(point[33..].to_vec())),
                    ])
                }
                Key::Ed(pair) => Value::Map(vec![
                    (int(1), int(1)),
                    (int(3), int(EDDSA)),
                    (int(-1), int(6)),
                    (int(-2), Value::Bytes(pair.public_key().as_ref().to_vec())),
                ]),
            }
        }

        fn sign(&self, message: &[u8]) -> Vec<u8> {
            match self {
                Key::P256(pair) => pair
                    .sign(&SystemRandom::new(), message)
                    .unwrap()
                    .as_ref()
                    .to_vec(),
                Key::Ed(pair) => pair.sign(message).as_ref().to_vec(),
            }
        }
    }

    fn client_data_json(kind: &str, challenge: &str, origin: &str) -> String {
        b64(
            serde_json::json!({"type": kind, "challenge": challenge, "origin": origin})
                .to_string()
                .as_bytes(),
        )
    }

    fn auth_data(rp_id: &str, flags: u8, count: u32, attested: Option<(&[u8], &Value)>) -> Vec<u8> {
        let mut data = Sha256::digest(rp_id.as_bytes()).to_vec();
        data.push(flags);
        data.extend_from_slice(&count.to_be_bytes());
        if let Some((id, key)) = attested {
            data.extend_from_slice(&[0; 16]);
            data.extend_from_slice(&(id.len() as u16).to_be_bytes());
            data.extend_from_slice(id);
            data.extend_from_slice(&cbor(key));
        }
        data
    }

    fn registration(key: &Key, challenge: &str, origin: &str, flags: u8) -> RegistrationCredential {
        let id = b"credential-1";
        let object = Value::Map(vec![
            (Value::Text("fmt".into()), Value::Text("none".into())),
            (Value::Text("attStmt".into()), Value::Map(vec![])),
            (
                Value::Text("authData".into()),
                Value::Bytes(auth_data(
                    "reader.example.org",
                    flags,
                    0,
                    Some((id, &key.cose())),
                )),
            ),
        ]);
        RegistrationCredential {
            id: b64(id),
            response: RegistrationResponse {
                client_data_json: client_data_json("webauthn.create", challenge, origin),
                attestation_object: b64(&cbor(&object)),
            },
        }
    }

    fn assertion(
        key: &Key,
        challenge: &str,
        origin: &str,
        flags: u8,
        count: u32,
    ) -> AssertionCredential {
        let client = client_data_json("webauthn.get", challenge, origin);
        let data = auth_data("reader.example.org", flags, count, None);
        let mut signed = data.clone();
        signed.extend_from_slice(&Sha256::digest(unb64(&client).unwrap()));
        AssertionCredential {
            id: b64(b"credential-1"),
            response: AssertionResponse {
                client_data_json: client,
                authenticator_data: b64(&data),
                signature: b64(&key.sign(&signed)),
                user_handle: Some(b64(&user_handle(7))),
            },
        }
    }

    const ORIGIN: &str = "https://reader.example.org";
    const UP_UV_AT: u8 = 0x01 | 0x04 | 0x40;

    #[test]
    fn a_passkey_registers_and_signs_in_with_both_key_types() {
        for key in [Key::p256(), Key::ed25519()] {
            let challenge = new_challenge();
            let new = verify_registration(
                &rp(),
                &challenge,
                &registration(&key, &challenge, ORIGIN, UP_UV_AT),
            )
            .unwrap();
            assert_eq!(new.credential_id, b64(b"credential-1"));
            let challenge = new_challenge();
            let signed = verify_assertion(
                &rp(),
                &challenge,
                &assertion(&key, &challenge, ORIGIN, 0x05, 3),
                &new.public_key,
                true,
            )
            .unwrap();
            assert_eq!(
                signed,
                Assertion {
                    sign_count: 3,
                    user_verified: true
                }
            );

            // Another key's signature, another challenge, another origin: refused.
            let other = Key::p256();
            let forged = assertion(&other, &challenge, ORIGIN, 0x05, 4);
            assert_eq!(
                verify_assertion(&rp(), &challenge, &forged, &new.public_key, true),
                Err(WebauthnError::BadSignature)
            );
            let stale = assertion(&key, &new_challenge(), ORIGIN, 0x05, 4);
            assert!(matches!(
                verify_assertion(&rp(), &challenge, &stale, &new.public_key, true),
                Err(WebauthnError::Mismatch(_))
            ));
            let phished = assertion(
                &key,
                &challenge,
                "https://reader.example.org.evil.test",
                0x05,
                4,
            );
            assert!(matches!(
                verify_assertion(&rp(), &challenge, &phished, &new.public_key, true),
                Err(WebauthnError::Mismatch(_))
            ));
            // Present but not verified: fine as a second factor only when not required.
            let unverified = assertion(&key, &challenge, ORIGIN, 0x01, 5);
            assert_eq!(
                verify_assertion(&rp(), &challenge, &unverified, &new.public_key, true),
                Err(WebauthnError::NotVerified(
                    "verify the user (PIN or biometrics)"
                ))
            );
            assert!(
                verify_assertion(&rp(), &challenge, &unverified, &new.public_key, false).is_ok()
            );
            let absent = assertion(&key, &challenge, ORIGIN, 0x00, 6);
            assert!(matches!(
                verify_assertion(&rp(), &challenge, &absent, &new.public_key, false),
                Err(WebauthnError::NotVerified(_))
            ));
            // A registration answer is not a sign-in answer.
            let mut swapped = assertion(&key, &challenge, ORIGIN, 0x05, 7);
            swapped.response.client_data_json =
                client_data_json("webauthn.create", &challenge, ORIGIN);
            assert!(matches!(
                verify_assertion(&rp(), &challenge, &swapped, &new.public_key, true),
                Err(WebauthnError::Mismatch(_))
            ));
        }
    }

    #[test]
    fn registration_refuses_other_sites_challenges_and_unverified_users() {
        let key = Key::p256();
        let challenge = new_challenge();
        let other_rp = RelyingParty::for_base_url(&"https://other.example.org/".parse().unwrap());
        let answer = registration(&key, &challenge, ORIGIN, UP_UV_AT);
        assert!(matches!(
            verify_registration(&other_rp, &challenge, &answer),
            Err(WebauthnError::Mismatch(_))
        ));
        assert!(matches!(
            verify_registration(&rp(), &new_challenge(), &answer),
            Err(WebauthnError::Mismatch(_))
        ));
        assert!(matches!(
            verify_registration(
                &rp(),
                &challenge,
                &registration(&key, &challenge, ORIGIN, 0x41)
            ),
            Err(WebauthnError::NotVerified(_))
        ));
        let mut cut = answer.clone();
        cut.response.attestation_object = b64(b"\xa1");
        assert!(matches!(
            verify_registration(&rp(), &challenge, &cut),
            Err(WebauthnError::Malformed(_))
        ));
        assert_eq!(
            unb64("%%"),
            Err(WebauthnError::Malformed("a field is not base64url".into()))
        );
    }

    #[test]
    fn the_relying_party_comes_from_the_base_url() {
        let rp =
            RelyingParty::for_base_url(&"https://news.example.org:8443/reader/".parse().unwrap());
        assert_eq!(rp.id, "news.example.org");
        assert_eq!(rp.origin, "https://news.example.org:8443");
        assert_eq!(user_from_handle(&user_handle(42)), Some(42));
        assert_eq!(user_from_handle(b"short"), None);
    }
}
