//! TLS client configuration: webpki roots, an optional private CA, or no verification at all;
//! and a client certificate for servers that require mutual TLS.

use crest_model::plan::TlsOptions;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::sync::Arc;

/// Builds the client configuration, offering `alpn` (most preferred first). Errors are messages
/// for the user.
pub(crate) fn client_config(opts: &TlsOptions, alpn: &[&[u8]]) -> Result<ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup failed: {e}"))?;
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
                let cert = cert.map_err(|e| format!("the CA file is not valid PEM: {e}"))?;
                roots
                    .add(cert)
                    .map_err(|e| format!("the CA file holds an unusable certificate: {e}"))?;
                added += 1;
            }
            if added == 0 {
                return Err("the CA file holds no PEM certificate".into());
            }
        }
        builder.with_root_certificates(roots)
    };
    let mut config = match &opts.client_pem {
        None => builder.with_no_client_auth(),
        Some((cert_pem, key_pem)) => {
            let chain = rustls_pemfile::certs(&mut cert_pem.as_slice())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("the client certificate file is not valid PEM: {e}"))?;
            if chain.is_empty() {
                return Err("the client certificate file holds no PEM certificate".into());
            }
            // The key's bytes never go into a message.
            let key = rustls_pemfile::private_key(&mut key_pem.as_slice())
                .map_err(|_| "the client key file is not valid PEM".to_string())?
                .ok_or_else(|| "the client key file holds no private key".to_string())?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("the client certificate and key do not go together: {e}"))?
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
