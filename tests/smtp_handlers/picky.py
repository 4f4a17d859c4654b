"""An aiosmtpd handler for burnrate's tests: stores mail like Mailbox, but rejects every
recipient whose address starts with "reject", as a real server rejects an unknown mailbox
(550 at RCPT), so one alert can be accepted for some recipients and refused for others."""

from aiosmtpd.handlers import Mailbox


class Picky(Mailbox):
    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address.lower().startswith("reject"):
            return "550 5.1.1 <%s>: mailbox unavailable" % address
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        # A server that stalls: the first message to a "slow" recipient is held (a marker
        # file says it arrived) far longer than any client waits; later ones go through.
        import asyncio
        import os

        marker = os.environ.get("PICKY_SLOW_MARKER")
        slow = any(r.lower().startswith("slow") for r in envelope.rcpt_tos)
        if marker and slow and not os.path.exists(marker):
            with open(marker, "w") as f:
                f.write("held")
            await asyncio.sleep(120)
        return await super().handle_DATA(server, session, envelope)
