// Admin › Prices: gives a model or a tier its first price (PUT /admin/prices with create), as
// generation's start asks for when the models file offers a tier that has none.
import { useState } from "../vendor/hooks.mjs";
import { html } from "../lib/html.js";
import { put } from "../lib/api.js";
import { Card, ErrorAlert, Field } from "./ui.js";
import { MONEY, useAction } from "./account-actions.js";

const TIERS = ["1K", "2K", "4K"];

export function NewPriceForm({ onSaved }) {
  const [model, setModel] = useState("");
  const [tier, setTier] = useState("1K");
  const [amount, setAmount] = useState("");
  const [note, setNote] = useState("");
  const action = useAction();
  const invalid = amount.trim() !== "" && !MONEY.test(amount.trim());
  const zero = !invalid && amount.trim() !== "" && /^0*\.?0*$/.test(amount.trim());
  const submit = async (event) => {
    event.preventDefault();
    if (invalid || !model.trim() || !amount.trim()) return;
    const body = { model: model.trim(), tier, usd: amount.trim(), create: true };
    if (zero) body.free = true;
    if (note.trim()) body.note = note.trim();
    if (await action.run(() => put("/admin/prices", body))) {
      setModel("");
      setAmount("");
      setNote("");
      onSaved();
    }
  };
  return html`<${Card} title="New price" subtitle="A model's first price, or a tier it had none for. Use the model's own id, not an alias.">
    <form class="form-row" data-testid="new-price" onSubmit=${submit}>
      <${Field} label="Model id"><input name="model" value=${model} onInput=${(event) => setModel(event.target.value)} /><//>
      <${Field} label="Tier">
        <select name="tier" value=${tier} onChange=${(event) => setTier(event.target.value)}>${TIERS.map((name) => html`<option value=${name}>${name}</option>`)}</select>
      <//>
      <${Field} label="USD per image" error=${invalid ? "A dollar amount such as 0.04" : null}>
        <input name="usd" inputMode="decimal" value=${amount} onInput=${(event) => setAmount(event.target.value)} />
      <//>
      <${Field} label="Note"><input name="note" placeholder="Why (kept with the change)" value=${note} onInput=${(event) => setNote(event.target.value)} /><//>
      <button type="submit" class="button primary" disabled=${action.busy || invalid || !model.trim() || !amount.trim()}>Add price</button>
    </form>
    ${zero && html`<p class="muted small">A price of $0 makes the tier free.</p>`}
    <${ErrorAlert} error=${action.error} />
  <//>`;
}
