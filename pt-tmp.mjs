import { PDFDocument, rgb } from 'pdf-lib';
import fontkit from '@pdf-lib/fontkit';
import fs from 'node:fs';
import { createRequire } from 'node:module';
const req = createRequire(import.meta.url);
const reg = fs.readFileSync(req.resolve('@expo-google-fonts/roboto/400Regular/Roboto_400Regular.ttf'));
const bold = fs.readFileSync(req.resolve('@expo-google-fonts/roboto/700Bold/Roboto_700Bold.ttf'));
async function once() {
  const doc = await PDFDocument.create({ updateMetadata: false });
  doc.registerFontkit(fontkit);
  const f = await doc.embedFont(reg, { subset: true, customName: 'Roboto-Regular' });
  const b = await doc.embedFont(bold, { subset: true, customName: 'Roboto-Bold' });
  const p = doc.addPage([288, 432]);
  p.drawText('Hello Zoë Müller Привет', { x: 20, y: 400, size: 12, font: f });
  p.drawText('SAMPLE - NOT FOR SHIPPING', { x: 20, y: 300, size: 14, font: b });
  p.drawSvgPath('M10 10 h 5 v 40 h -5 Z M 20 10 h 2 v 40 h -2 Z M100 100 A 20 20 0 1 1 100.01 100 Z', { x: 0, y: 432, scale: 1 });
  doc.setCreationDate(new Date(0)); doc.setModificationDate(new Date(0));
  return doc.save();
}
let t = performance.now(); let a = await once(); console.log('first', performance.now() - t, a.length);
for (let i = 0; i < 5; i++) { t = performance.now(); const b = await once(); console.log('n', performance.now() - t, Buffer.compare(Buffer.from(a), Buffer.from(b))); }
fs.writeFileSync('/tmp/pt.pdf', a);
console.log(Buffer.from(a).toString('latin1').match(/\/ID.*|\/Producer.*|\/CreationDate.*/g));
