"""Human-baseline API: a curator opens a session; the clinician answers through the API."""

from __future__ import annotations

from django.test import TestCase
from rest_framework.test import APIClient

from annotations.models import Run, RunStatus
from tests.factories import make_benchmark, make_item, make_personas


class BaselineApiTests(TestCase):
    @classmethod
    def setUpTestData(cls):
        cls.people = make_personas()
        cls.benchmark = make_benchmark("endo-human")
        cls.items = [make_item(cls.benchmark, index=i, answer="B") for i in range(1, 4)]

    def api(self, who: str | None) -> APIClient:
        client = APIClient()
        if who:
            client.force_authenticate(self.people[who])
        return client

    def open(self, **body) -> dict:
        body = {"clinician": "alice", "limit": 2, **body}
        response = self.api("curator").post(
            "/api/benchmarks/endo-human/baselines/", body, format="json"
        )
        self.assertEqual(response.status_code, 201, response.content)
        return response.json()

    def test_a_clinician_answers_a_session_to_the_end_without_seeing_the_answers(self):
        session = self.open()
        self.assertEqual(
            (session["kind"], session["status"], session["total"]), ("human", "running", 2)
        )
        alice = self.api("reviewer")
        self.assertEqual([s["id"] for s in alice.get("/api/baselines/").json()], [session["id"]])
        url = f"/api/baselines/{session['id']}"

        first = alice.get(f"{url}/next/").json()
        self.assertEqual((first["item"], first["index"]), (self.items[0].pk, 1))
        self.assertNotIn("answer", first)
        self.assertEqual(first["options"]["A"], "Polyp")
        self.assertTrue(first["images"][0].startswith("/images/"))

        bad = alice.post(f"{url}/answers/", {"item": first["item"], "letter": "Q"}, format="json")
        self.assertEqual(bad.status_code, 400)
        answer = {"item": first["item"], "letter": "B", "seconds_spent": 4.5}
        done = alice.post(f"{url}/answers/", answer, format="json")
        self.assertEqual((done.status_code, done.json()["completed"]), (201, 1))
        again = alice.post(f"{url}/answers/", answer, format="json")
        self.assertEqual((again.status_code, again.json()["code"]), (400, "duplicate"))

        second = alice.get(f"{url}/next/").json()
        last = alice.post(f"{url}/answers/", {"item": second["item"], "letter": "a"}, format="json")
        self.assertEqual(last.json()["status"], RunStatus.DONE)
        self.assertEqual(alice.get(f"{url}/next/").status_code, 204)
        run = Run.objects.get(pk=session["id"])
        self.assertEqual(run.summary["overall"]["hits"], 1)  # B was right, A was not

    def test_only_the_sessions_clinician_reaches_it(self):
        session = self.open()
        url = f"/api/baselines/{session['id']}"
        self.assertEqual(self.api("reviewer2").get(f"{url}/next/").status_code, 404)
        body = {"item": self.items[0].pk, "letter": "B"}
        self.assertEqual(
            self.api("reviewer2").post(f"{url}/answers/", body, format="json").status_code, 404
        )
        self.assertEqual(self.api("curator").get(f"{url}/next/").status_code, 403)
        self.assertEqual(self.api(None).get("/api/baselines/").status_code, 401)
        self.assertEqual(Run.objects.get(pk=session["id"]).completed, 0)

    def test_who_may_open_a_session_and_for_whom(self):
        opening = "/api/benchmarks/endo-human/baselines/"
        self.assertEqual(
            self.api("reviewer").post(opening, {"clinician": "alice"}, format="json").status_code,
            403,
        )
        response = self.api("curator").post(opening, {"clinician": "eve"}, format="json")
        self.assertEqual(response.status_code, 400)  # eve has no clinician role
        self.assertIn("reviewer or an adjudicator", response.json()["detail"])
        response = self.api("curator").post(
            opening, {"clinician": "alice", "filters": {"category": "Nothing"}}, format="json"
        )
        self.assertEqual(response.status_code, 400)
        self.assertEqual(
            self.api("curator").post(opening, {"clinician": "nobody"}, format="json").status_code,
            404,
        )
        self.assertFalse(Run.objects.exists())

    def test_a_curator_gives_a_session_to_another_clinician_and_the_first_keeps_its_answers(self):
        session = self.open()
        alice = self.api("reviewer")
        url = f"/api/baselines/{session['id']}"
        first = alice.get(f"{url}/next/").json()
        alice.post(f"{url}/answers/", {"item": first["item"], "letter": "B"}, format="json")

        reassign = f"{url}/reassign/"
        self.assertEqual(
            self.api("reviewer").post(reassign, {"clinician": "bob"}, format="json").status_code,
            403,
        )
        same = self.api("curator").post(reassign, {"clinician": "alice"}, format="json")
        self.assertEqual((same.status_code, same.json()["code"]), (400, "same_clinician"))
        outsider = self.api("curator").post(reassign, {"clinician": "eve"}, format="json")
        self.assertEqual(outsider.status_code, 400)
        response = self.api("curator").post(reassign, {"clinician": "bob"}, format="json")
        self.assertEqual(response.status_code, 201, response.content)
        given = response.json()
        self.assertEqual((given["status"], given["total"], given["completed"]), ("running", 2, 0))

        # Alice's session ended with her one answer scored; she can answer no more.
        old = Run.objects.get(pk=session["id"])
        self.assertEqual((old.status, old.completed), (RunStatus.CANCELLED, 1))
        self.assertEqual(old.summary["overall"]["hits"], 1)
        second = alice.get(f"{url}/next/").json()
        closed = alice.post(
            f"{url}/answers/", {"item": second["item"], "letter": "B"}, format="json"
        )
        self.assertEqual(closed.json()["code"], "closed")

        # Bob answers the same two items from the start, in his own session.
        bob = self.api("reviewer2")
        self.assertEqual([s["id"] for s in bob.get("/api/baselines/").json()], [given["id"]])
        start = bob.get(f"/api/baselines/{given['id']}/next/").json()
        self.assertEqual(start["item"], self.items[0].pk)
        new = Run.objects.get(pk=given["id"])
        self.assertEqual(new.filters["item_ids"], old.filters["item_ids"])
        self.assertEqual(new.human, self.people["reviewer2"])
        missing = self.api("curator").post("/api/baselines/99999/reassign/", {"clinician": "bob"})
        self.assertEqual(missing.status_code, 404)
