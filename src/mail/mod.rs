//! Outgoing email over SMTP (lettre, rustls on ring): `SMTP_URL` and `SMTP_FROM`.
//!
//! - `smtp://host:port`: plain SMTP, e.g. a local relay.
//! - `smtp://user:pass@host:587`: STARTTLS is required before the password is sent.
//! - `smtps://user:pass@host:465`: TLS from the first byte.
//! - `?tls=required` or `?tls=opportunistic` overrides the choice for `smtp://`.

pub mod address;
pub mod compose;

use std::fmt;
use std::time::Duration;

use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::AsyncSmtpTransport;
use lettre::{AsyncTransport, Message, Tokio1Executor};

/// Where and as whom to send. The URL may hold a password, so Debug and Display show only
/// the scheme, host and port.
#[derive(Clone, PartialEq, Eq)]
pub struct SmtpSettings {
    url: String,
    /// `smtp://host:port`, safe to log.
    pub server: String,
    pub from: Mailbox,
    /// Each step of a conversation (connect, greeting, every command) waits at most this.
    pub timeout: Duration,
}

impl fmt::Debug for SmtpSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SmtpSettings({} from {})", self.server, self.from)
    }
}

impl SmtpSettings {
    /// Checks both variables; the error says what is wrong without echoing a password.
    pub fn parse(url: &str, from: &str, timeout: Duration) -> Result<SmtpSettings, &'static str> {
        let parsed = url::Url::parse(url.trim()).map_err(|_| "SMTP_URL must look like smtp://host:port")?;
        let scheme = parsed.scheme();
        if scheme != "smtp" && scheme != "smtps" {
            return Err("SMTP_URL must start with smtp:// or smtps://");
        }
        let host = parsed
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or("SMTP_URL has no host")?;
        let has_tls_choice = parsed.query_pairs().any(|(k, _)| k == "tls");
        let mut url = parsed.clone();
        if scheme == "smtp" && parsed.password().is_some() && !has_tls_choice {
            // A password is never sent over an unencrypted connection.
            url.query_pairs_mut().append_pair("tls", "required");
        }
        AsyncSmtpTransport::<Tokio1Executor>::from_url(url.as_str())
            .map_err(|_| "SMTP_URL is not usable: expected smtp://host:port, smtp://user:pass@host:587 or smtps://user:pass@host")?;
        let from: Mailbox = from.trim().parse().map_err(
            |_| "SMTP_FROM must be an address such as burnrate@example.com or \"burnrate <burnrate@example.com>\"",
        )?;
        let port = parsed.port().map(|p| format!(":{p}")).unwrap_or_default();
        Ok(SmtpSettings {
            server: format!("{scheme}://{host}{port}"),
            url: url.to_string(),
            from,
            timeout,
        })
    }
}

/// One email, ready to send.
#[derive(Debug, Clone)]
pub struct Email<'a> {
    /// A stable id, so a mail client can fold a rare resend (after a crash between the
    /// server's acceptance and our record of it) into one message.
    pub message_id: String,
    pub to: &'a [String],
    pub subject: &'a str,
    pub text: &'a str,
    pub html: &'a str,
}

/// Why a send failed, and whether trying again can help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendFailure {
    /// A 5xx reply or an unusable message: retrying will not help.
    pub permanent: bool,
    pub message: String,
}

#[derive(Clone)]
pub struct Mailer {
    settings: SmtpSettings,
    transport: AsyncSmtpTransport<Tokio1Executor>,
}

impl Mailer {
    pub fn new(settings: SmtpSettings) -> Result<Mailer, SendFailure> {
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(&settings.url)
            .map_err(|e| SendFailure {
                permanent: true,
                message: e.to_string(),
            })?
            .timeout(Some(settings.timeout))
            .build();
        Ok(Mailer { settings, transport })
    }

    pub fn server(&self) -> &str {
        &self.settings.server
    }

    /// How long each SMTP step may take.
    pub fn timeout(&self) -> Duration {
        self.settings.timeout
    }

    /// Sends `email`; on success returns the server's reply, e.g. `250 OK`.
    pub async fn send(&self, email: &Email<'_>) -> Result<String, SendFailure> {
        let permanent = |message: String| SendFailure {
            permanent: true,
            message,
        };
        let mut builder = Message::builder()
            .from(self.settings.from.clone())
            .subject(email.subject)
            .message_id(Some(email.message_id.clone()));
        for to in email.to {
            let mailbox: Mailbox = to.parse().map_err(|_| permanent(format!("{to:?} is not an address")))?;
            builder = builder.to(mailbox);
        }
        let message = builder
            .multipart(MultiPart::alternative_plain_html(
                email.text.to_string(),
                email.html.to_string(),
            ))
            .map_err(|e| permanent(format!("building the message: {e}")))?;
        match self.transport.send(message).await {
            Ok(response) => Ok(format!(
                "{} {}",
                response.code(),
                response.message().collect::<Vec<_>>().join(" ")
            )),
            Err(error) => Err(SendFailure {
                permanent: error.is_permanent(),
                message: error.to_string(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_choose_tls_and_never_show_the_password() {
        let plain = SmtpSettings::parse("smtp://127.0.0.1:2525", "burnrate@example.com", Duration::from_secs(30))
            .expect("plain");
        assert_eq!(plain.server, "smtp://127.0.0.1:2525");
        let submission = SmtpSettings::parse(
            "smtp://alerts:s3cret%21@mail.example.com:587",
            "b@example.com",
            Duration::from_secs(30),
        )
        .expect("starttls");
        assert!(submission.url.contains("tls=required"), "{}", submission.url);
        let shown = format!("{submission:?} {}", submission.server);
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(SmtpSettings::parse("smtps://u:p@mail.example.com", "b@example.com", Duration::from_secs(30)).is_ok());
        assert!(SmtpSettings::parse("http://mail.example.com", "b@example.com", Duration::from_secs(30)).is_err());
        assert!(SmtpSettings::parse("smtp://", "b@example.com", Duration::from_secs(30)).is_err());
        assert!(SmtpSettings::parse("smtp://mail.example.com", "not an address", Duration::from_secs(30)).is_err());
        let err = SmtpSettings::parse("smtp://u:hunter2@@", "b@example.com", Duration::from_secs(30)).expect_err("bad");
        assert!(!err.contains("hunter2"));
    }
}
