//! TLS client configuration: webpki roots, an optional private CA, or no verification at all;
//! and a client certificate for servers that require mutual TLS.

use crest_model::plan::TlsOptions;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::sync::Arc;

/// Why the TLS client could not be set up: each names the file at fault (never its contents).
#[derive(Debug, thiserror::Error)]
pub(crate) enum TlsError {
    #[error("TLS setup failed: {0}")]
    Setup(rustls::Error),
    #[error("the CA file is not valid PEM: {0}")]
    CaPem(std::io::Error),
    #[error("the CA file holds an unusable certificate: {0}")]
    CaUnusable(rustls::Error),
    #[error("the CA file holds no PEM certificate")]
    CaEmpty,
    #[error("the client certificate file is not valid PEM: {0}")]
    CertPem(std::io::Error),
    #[error("the client certificate file holds no PEM certificate")]
    CertEmpty,
    /// The key's bytes never go into a message, so the parser's error is not kept.
    #[error("the client key file is not valid PEM")]
    KeyPem,
    #[error("the client key file holds no private key")]
    KeyMissing,
    #[error("the client certificate and key do not go together: {0}")]
    Mismatch(rustls::Error),
}

/// Builds the client configuration, offering `alpn` (most preferred first).
pub(crate) fn client_config(opts: &TlsOptions, alpn: &[&[u8]]) -> Result<ClientConfig, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Setup)?;
    let builder = if opts.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAny(provider)))
    } else {
        let mut roots = RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        if let Some(pem) = &opts.ca_pem {
            let mut added = 0;
            for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
                let cert = cert.map_err(TlsError::CaPem)?;
                roots.add(cert).map_err(TlsError::CaUnusable)?;
                added += 1;
            }
            if added == 0 {
                return Err(TlsError::CaEmpty);
            }
        }
        builder.with_root_certificates(roots)
    };
    let mut config = match &opts.client_pem {
        None => builder.with_no_client_auth(),
        Some((cert_pem, key_pem)) => {
            let chain = rustls_pemfile::certs(&mut cert_pem.as_slice())
                .collect::<Result<Vec<_>, _>>()
                .map_err(TlsError::CertPem)?;
            if chain.is_empty() {
                return Err(TlsError::CertEmpty);
            }
            let key = rustls_pemfile::private_key(&mut key_pem.as_slice())
                .map_err(|_| TlsError::KeyPem)?
                .ok_or(TlsError::KeyMissing)?;
            builder.with_client_auth_cert(chain, key).map_err(TlsError::Mismatch)?
        }
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(config)
}

/// `--insecure`: accepts any certificate but still checks handshake signatures, so the session
/// is encrypted with the key the server presented.
#[derive(Debug)]
struct AcceptAny(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(opts: TlsOptions) -> String {
        client_config(&opts, &[])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn bad_files_are_named_and_the_key_never_shown() {
        let no_cert = TlsOptions {
            ca_pem: Some(b"not a certificate".to_vec()),
            ..TlsOptions::default()
        };
        assert_eq!(error(no_cert), "the CA file holds no PEM certificate");
        // The certificate is never parsed before the key is: any PEM block will do.
        let cert = b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".to_vec();
        let secret = "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1ieXRlcw==\n-----END PRIVATE KEY-----\n";
        let bad_key = TlsOptions {
            client_pem: Some((cert.clone(), secret.as_bytes().to_vec())),
            ..TlsOptions::default()
        };
        let shown = error(bad_key);
        assert!(
            shown.starts_with("the client certificate and key do not go together"),
            "{shown}"
        );
        assert!(!shown.contains("c2VjcmV0"), "{shown}");
        let no_key = TlsOptions {
            client_pem: Some((cert.clone(), b"no key here".to_vec())),
            ..TlsOptions::default()
        };
        assert_eq!(error(no_key), "the client key file holds no private key");
    }
}
