# verdict: reject
import asyncio
async def main():
    await asyncio.create_subprocess_shell("id")  # expect: LB102
