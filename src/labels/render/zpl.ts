import type { LabelDocument } from './document.js';
import {
  type BarcodeItem,
  type BoxItem,
  code128Modules,
  type LayoutItem,
  layoutLabel,
  PDF417,
  type TextItem,
} from './layout.js';

/**
 * ZPL II for a 203-dpi Zebra printer. Text is UTF-8 (`^CI28`) and every field goes through `^FH`, so
 * characters that ZPL reserves (`^`, `~`) or that are not plain ASCII reach the printer as hex bytes.
 */
export function renderZpl(doc: LabelDocument): string {
  const layout = layoutLabel(doc);
  const lines = ['^XA', '^CI28', `^PW${layout.width}`, `^LL${layout.height}`, '^LH0,0', '^PON', '^MNY'];
  for (const item of layout.items) lines.push(zplItem(item));
  lines.push('^PQ1', '^XZ');
  return `${lines.join('\n')}\n`;
}

function zplItem(item: LayoutItem): string {
  switch (item.kind) {
    case 'text':
      return zplText(item);
    case 'box':
      return zplBox(item);
    case 'barcode':
      return zplBarcode(item);
  }
}

/**
 * Field data with `_` as the `^FH` escape: anything but plain printable ASCII goes as hex bytes, and
 * so do `^` and `~` (command prefixes), `_` itself and `\\` (which starts a line break in a `^FB`).
 */
function zplFieldData(value: string): string {
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const char = String.fromCharCode(byte);
    const plain = byte >= 0x20 && byte < 0x7f && !'^~_\\'.includes(char);
    out += plain ? char : `_${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return `^FH_^FD${out}^FS`;
}

function zplText(item: TextItem): string {
  // ^FT puts the field's baseline at y, as the layout does; with ^FB that is the baseline of its last line.
  const block = item.align === 'center' ? `^FB${item.width},1,0,C,0` : '';
  const reverse = item.inverse ? '^FR' : '';
  return `^FT${item.x},${item.baseline}^A0N,${item.size},${item.size}${block}${reverse}${zplFieldData(item.text)}`;
}

function zplBox(item: BoxItem): string {
  const thickness = item.thickness ?? Math.min(item.width, item.height);
  return `^FO${item.x},${item.y}^GB${item.width},${item.height},${thickness},B,0^FS`;
}

function zplBarcode(item: BarcodeItem): string {
  const origin = `^FO${item.x},${item.y}`;
  switch (item.symbology) {
    case 'code128': {
      // ZPL cannot centre a field, so the layout's estimate of the symbol's width places it.
      const width = item.module * code128Modules(item.data);
      const x = item.x + Math.max(0, Math.floor((item.width - width) / 2));
      // Automatic mode (A) picks code sets as bwip-js does; the human-readable line is the layout's text.
      const symbol = `^BY${item.module},3,${item.height}^BCN,${item.height},N,N,N,A`;
      return `^FO${x},${item.y}${symbol}${zplFieldData(item.data)}`;
    }
    case 'pdf417': {
      const { columns, securityLevel, rowModules } = PDF417;
      const symbol = `^BY${item.module},3^B7N,${item.module * rowModules},${securityLevel},${columns},,N`;
      return `${origin}${symbol}${zplFieldData(item.data)}`;
    }
    case 'datamatrix':
      return `${origin}^BXN,${item.module},200${zplFieldData(item.data)}`;
    case 'maxicode': {
      const message = item.maxicode;
      if (!message) throw new Error('a MaxiCode item needs its structured message');
      // ^BD takes the primary message first (class, country, postal code), then the rest after its header.
      const primary = `${message.serviceClass}${message.countryCode}${message.postalCode}`;
      return `${origin}^BD${message.mode},1,1${zplFieldData(`${primary}[)>\x1e01\x1d96${message.secondary}`)}`;
    }
  }
}
