"""The web UI in a real browser (F45): a streamed answer with its steps, conversations the
server keeps (titled, listed after a reload and in another browser), private mode and the
control bar, a PDF uploaded through the page and asked about, and the run inspector for an
admin but not for a user."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from playwright.async_api import Response, Route, expect

from weir_common.events import new_id
from weir_common.testing.script import ScriptRule
from weir_common.testing.scripted_llm import ScriptedLLM

from .conftest import OpenTab

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

PDF = Path(__file__).parents[1] / "data" / "pdfs" / "scotus-transcript-p1.pdf"
ANSWER = "Hello from **weir** in a browser. 你好，世界：中文也能显示。"


def someone(name: str) -> str:
    """A fresh user id per test."""
    return f"{name}-{new_id()[:6]}"


async def test_an_answer_streams_with_its_steps(open_tab: OpenTab, llm: ScriptedLLM) -> None:
    llm.set_script([ScriptRule(match="stream me", text=ANSWER)])
    tab = await open_tab(someone("web"))
    await tab.connected()
    done = await tab.send("Please stream me a greeting")
    assert done["type"] == "done", tab.received
    deltas = tab.frames("delta")
    assert len(deltas) >= 2, "the answer came in one piece: nothing streamed"
    answer = tab.page.locator(".turn.assistant").last
    await expect(answer.locator(".md strong")).to_have_text("weir")  # markdown rendered
    await expect(answer.locator(".md")).to_contain_text("你好，世界")
    await expect(answer.locator(".step-route summary")).to_contain_text("Route:")
    await expect(tab.page.locator(".turn.user .bubble").last).to_have_text(
        "Please stream me a greeting"
    )
    [chat] = [f for f in tab.sent if f.get("type") == "chat"]
    assert (chat["knowledge"], chat["tools"], chat["private"]) == (True, True, False)
    await tab.shot("chat-streamed")


async def test_a_conversation_is_titled_and_listed_after_a_reload(
    open_tab: OpenTab, llm: ScriptedLLM
) -> None:
    llm.set_script([ScriptRule(match="Tell me about rivers", text="Rivers flow to the sea.")])
    user = someone("titles")
    tab = await open_tab(user)
    await tab.connected()
    await tab.send("Tell me about rivers and where they go")
    [chat] = [f for f in tab.sent if f.get("type") == "chat"]
    conversation = chat["conversation_id"]
    await tab.until(lambda: bool(tab.frames("title")))
    title = tab.frames("title")[-1]
    assert title["conversation_id"] == conversation
    assert title["title"]
    item = tab.page.locator(f'#conv-list li[data-id="{conversation}"] .conv')
    await expect(item).to_have_text(title["title"])

    await tab.page.reload()
    await expect(item).to_have_text(title["title"])
    await tab.shot("sidebar-after-reload")

    # another browser of the same user: nothing local, all from the server
    fresh = await open_tab(user)
    listed = fresh.page.locator(f'#conv-list li[data-id="{conversation}"] .conv')
    await expect(listed).to_have_text(title["title"])
    await listed.click()
    await expect(fresh.page.locator(".turn.user .bubble")).to_have_text(
        "Tell me about rivers and where they go"
    )
    await expect(fresh.page.locator(".turn.assistant .md")).to_contain_text("Rivers flow")

    fresh.page.once("dialog", lambda dialog: dialog.accept("Rivers, renamed"))
    await fresh.page.locator(
        f'#conv-list li[data-id="{conversation}"] [aria-label="Rename"]'
    ).click()
    await expect(listed).to_have_text("Rivers, renamed")
    fresh.page.once("dialog", lambda dialog: dialog.accept())
    await fresh.page.locator(
        f'#conv-list li[data-id="{conversation}"] [aria-label="Delete"]'
    ).click()
    await expect(listed).to_have_count(0)
    await fresh.page.reload()
    await expect(fresh.page.locator("#conv-status")).to_have_text("")
    await expect(listed).to_have_count(0)


async def test_private_mode_and_the_control_bar_go_with_each_message(
    open_tab: OpenTab, llm: ScriptedLLM
) -> None:
    llm.set_script([ScriptRule(match="secret plan", text="Noted, privately.")])
    tab = await open_tab(someone("private"))
    await tab.connected()
    page = tab.page
    await expect(page.locator(".private-banner")).to_be_hidden()
    await page.locator("#private").check()
    await page.locator("#use-knowledge").uncheck()
    await page.locator("#use-tools").uncheck()
    await expect(page.locator(".private-banner")).to_be_visible()
    await tab.send("My secret plan is to learn the cello")
    [chat] = [f for f in tab.sent if f.get("type") == "chat"]
    assert (chat["private"], chat["knowledge"], chat["tools"]) == (True, False, False)
    await expect(page.locator(".turn.user .tag")).to_have_text("private")
    await tab.shot("private-chat")
    private_chat = chat["conversation_id"]

    await page.locator("#new-chat").click()  # private mode belongs to one chat
    await expect(page.locator("#private")).not_to_be_checked()
    await expect(page.locator("#use-tools")).not_to_be_checked()  # the switches stay
    await page.reload()
    await expect(page.locator("#private")).not_to_be_checked()
    await page.evaluate("id => localStorage.setItem('weir.current', id)", private_chat)
    await page.reload()
    await expect(page.locator("#private")).to_be_checked()
    await expect(page.locator(".private-banner")).to_be_visible()


async def test_a_pdf_uploaded_in_the_page_is_cited_in_an_answer(
    open_tab: OpenTab, llm: ScriptedLLM
) -> None:
    tab = await open_tab(someone("reader"), path="/#knowledge")
    page = tab.page
    await page.locator("#upload-files").set_input_files(PDF)
    await page.locator("#upload-button").click()
    await expect(page.locator("#upload-status")).to_have_class("status ok", timeout=120_000)
    await expect(page.locator("#upload-status")).to_contain_text("scotus-transcript-p1.pdf")
    row = page.locator("#docs-body tr", has_text="scotus-transcript-p1.pdf")
    await expect(row).to_have_count(1)
    await row.get_by_role("button", name="Chunks").click()
    await expect(page.locator("#chunks-list li").first).to_contain_text("#0")
    assert await page.locator("#chunks-list li").count() > 0
    await tab.shot("knowledge")

    llm.set_script(
        [ScriptRule(match="Knowles", text="Steven E. Mercer argued for the petitioner [1].")]
    )
    await page.locator("#tab-chat").click()
    await tab.connected()
    done = await tab.send("Who argued on behalf of the Petitioner in Knowles v. Mirzayance?")
    assert (done["type"], done.get("route")) == ("done", "rag"), done
    answer = page.locator(".turn.assistant").last
    await expect(answer.locator(".step-retrieval summary")).to_contain_text(
        "scotus-transcript-p1.pdf"
    )
    await expect(answer.locator(".sources li").first).to_contain_text("scotus-transcript-p1.pdf")
    await expect(answer.locator("a.cite")).to_have_attribute("href", re.compile(r"-1$"))
    await tab.shot("knowledge-answer")


async def test_the_run_inspector_is_for_admins(open_tab: OpenTab, llm: ScriptedLLM) -> None:
    # small talk: the plain-chat route, whose verdict is `completed` (backed by the model)
    llm.set_script([ScriptRule(match="Thank you", text="You are welcome.")])
    user = someone("runner")
    tab = await open_tab(user)
    await tab.connected()
    done = await tab.send("Hello! Thank you!")
    run_id = done["run_id"]
    await expect(tab.page.locator("#tab-runs")).to_be_hidden()
    tab.received.clear()

    # a user asking for someone else's runs is refused by the server, and sees so, even
    # when the tab's own listing (opened with the tab) answers after the refusal
    async def own_listing_late(route: Route) -> None:
        if "user=" not in route.request.url:
            await asyncio.sleep(1.5)
        await route.continue_()

    def own_listing(response: Response) -> bool:
        return "/api/runs?" in response.url and "user=" not in response.url

    note = tab.page.locator("#runs-note")
    await tab.page.route("**/api/runs?*", own_listing_late)
    async with tab.page.expect_response(own_listing) as own:
        await tab.page.goto("/#runs")
        await tab.page.locator("#runs-user").fill("ops")
        await tab.page.locator("#runs-form button[type=submit]").click()
        await expect(note).to_contain_text("Refused by the server")
    await own.value
    await tab.page.evaluate("() => new Promise((done) => setTimeout(done, 200))")
    await expect(note).to_contain_text("Refused by the server")
    await expect(note).to_contain_text("403")
    await tab.page.unroute("**/api/runs?*")
    await expect(tab.page.locator(".run-row")).to_have_count(0)
    await tab.shot("runs-refused")

    admin = await open_tab(someone("ops"), role="admin")
    page = admin.page
    await expect(page.locator("#tab-runs")).to_be_visible()
    await page.locator("#tab-runs").click()
    await page.locator("#runs-user").fill(user)
    await page.locator("#runs-form button[type=submit]").click()
    row = page.locator(f'.run-row[data-run="{run_id}"]')
    await expect(row).to_have_count(1)
    await expect(row).to_contain_text("completed")
    await row.click()
    card = page.locator("#run-card")
    await expect(card.locator("#run-title")).to_contain_text(run_id)
    await expect(card.locator(".verdicts")).to_contain_text("completed")
    await expect(card.locator(".timeline li").first).to_be_visible()
    assert await card.locator(".timeline li").count() >= 2
    await admin.shot("runs-admin")


async def test_the_memory_page_exports_and_forgets_me(open_tab: OpenTab, llm: ScriptedLLM) -> None:
    llm.set_script([ScriptRule(match="remember tea", text="Tea it is.")])
    user = someone("forgetful")
    tab = await open_tab(user)
    await tab.connected()
    await tab.send("Please remember tea is my favourite drink")
    page = tab.page
    await page.locator("#tab-memory").click()
    await expect(page.locator("#memory-status")).to_have_text(f"Memories of {user}.")
    async with page.expect_download() as downloading:
        await page.locator("#memory-export").click()
    download = await downloading.value
    assert download.suggested_filename == f"weir-memory-{user}.json"
    exported = json.loads(await asyncio.to_thread(Path(await download.path()).read_text))
    assert isinstance(exported, dict)
    await tab.shot("memory")

    await page.locator("#forget-me").click()
    await expect(page.locator("#forget-user")).to_have_text(user)
    await page.locator("#forget-dialog button[value=forget]").click()
    await expect(page.locator("#memory-status")).to_contain_text("Forgotten:")
    await expect(page.locator("#memory-status")).to_have_class("status ok")
    await page.locator("#tab-chat").click()
    await expect(page.locator(".turn")).to_have_count(0)  # this browser's copy is gone too
