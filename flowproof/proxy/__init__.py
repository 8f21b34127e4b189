"""The loopback model proxy: aiohttp IO around the pure dialect and matching layers."""
