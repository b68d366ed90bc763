"""The doors of the gateway: WebSocket, Server-Sent Events and the OpenAI-compatible API.

Each is a thin encoder of the neutral frames of `weir_gateway.stream`, with an `encode`
function and a `DROPPED` table naming the frame kinds it deliberately does not carry.
"""
