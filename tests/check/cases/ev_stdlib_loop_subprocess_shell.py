# verdict: reject
# A method of an object the check cannot type (the running event loop): every class of the
# standard library with this method starts a process through it.
import asyncio


async def main():
    loop = asyncio.get_running_loop()
    await loop.subprocess_shell(asyncio.SubprocessProtocol, "touch MARKER")  # expect: LB102
    await loop.subprocess_exec(asyncio.SubprocessProtocol, "touch", "M")  # expect: LB102

asyncio.run(main())
